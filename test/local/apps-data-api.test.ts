import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { LocalAppsDriver } from '../../activities/provider/local/apps/driver';
import { createLocalData, type LocalData } from '../../activities/provider/local/data';
import { detectIsolation } from '../../activities/provider/local/sandbox/isolation';
import { appUid } from '../../platform/local-layout';
import { insertApp } from '../support/data';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import {
  FixtureBuilder,
  RecordingIngress,
  RecordingSink,
  tempLayout,
  runSpecOf,
  setAppVariables,
} from '../support/local-apps';
import { eventually, startStack, type TestStack } from '../support/stack';
import { localCapabilities } from '../../activities/provider/local/capabilities';

/**
 * Cron jobs and storage services through the API and the workflows, run by the local
 * driver: real processes in the apps' releases, a real volume folder.
 */
describe('cron jobs and storage volumes on the local driver, through the API', () => {
  const isolation = detectIsolation();
  let stack: TestStack;
  let ws: Workspace;
  let temp: ReturnType<typeof tempLayout>;
  let apps: LocalAppsDriver;
  let data: LocalData;
  let builder: FixtureBuilder;
  const owner = () => ({ Authorization: `Bearer ${ws.ownerToken}` });

  beforeAll(async () => {
    stack = await startStack();
    temp = tempLayout();
    builder = new FixtureBuilder(temp.layout, isolation.uidSwitch);
    const deps = {
      dataSource: stack.ds,
      secretBox: stack.secretBox,
      layout: temp.layout,
      isolation,
      logger: stack.logger,
      host: '127.0.0.1',
    };
    apps = new LocalAppsDriver({ ...deps, builder, ingress: new RecordingIngress(), events: new RecordingSink() });
    data = createLocalData({ ...deps, jobs: apps });
    stack.activityDeps.provider.data = data;
    stack.apiDeps.capabilities = {
      ...localCapabilities({ valkeyServer: undefined, mysqlServer: undefined, workloadNetwork: null }),
      engine: (e) => data.supports(e),
    };
    ws = await seedWorkspace(stack.ds);
    await stack.startWorker();
  });
  afterAll(async () => {
    for (const { app_uuid: uuid } of await stack.ds.query(`SELECT app_uuid FROM local_apps`)) await apps.delete(uuid);
    await apps.close();
    await data.close();
    await stack.close();
    temp.cleanup();
  });

  async function deployedApp(env: Record<string, string> = {}): Promise<string> {
    const appUuid = await insertApp(stack.ds, ws);
    await apps.provision({
      appUuid,
      name: 'a',
      resourceUuid: ws.resourceUuid,
      internalPort: 8080,
      cpuSize: 1,
      ramSize: 2 ** 29,
      diskSize: 2 ** 30,
      replicas: 1,
    });
    await setAppVariables(stack.ds, stack.secretBox, appUuid, env);
    await apps.rollout(appUuid, builder.image(appUuid, 'sup-web'), await runSpecOf(stack.ds, stack.secretBox, appUuid));
    await eventually(async () => (await apps.status(appUuid)) === 'running', {
      timeoutMs: 20_000,
      what: 'the app running',
    });
    return appUuid;
  }

  (isolation.mountNamespaces ? it : it.skip)(
    'ADD-08 a storage service mounted with a sub_path: one app writes at its mount path, another reads it',
    async () => {
      const mountRoot = `/tmp/berth-api-mnt-${randomBytes(4).toString('hex')}`;
      try {
        const created = await stack.http
          .post('/api/v1/services')
          .set(owner())
          .send({ type: 'storage', label: 'shared files', resource_id: ws.resourceUuid });
        expect(created.status).toBe(201);
        await eventually(
          async () =>
            (await stack.http.get(`/api/v1/services/${created.body.uuid}`).set(owner())).body.state === 'bound',
          { timeoutMs: 30_000, what: 'bound' },
        );
        const [writer, reader] = [await deployedApp(), await deployedApp()];
        for (const [app, mountPath, sub] of [
          [writer, `${mountRoot}/w`, 'reports/2026'],
          [reader, `${mountRoot}/r`, undefined],
        ] as const) {
          const res = await stack.http
            .post(`/api/v1/services/${created.body.uuid}/mount_app`)
            .set(owner())
            .send({ app_uuid: app, mount_path: mountPath, sub_path: sub });
          expect(res.status).toBe(201);
        }
        await eventually(
          async () =>
            (
              await stack.ds.query(`SELECT 1 FROM service_mounts WHERE service_uuid = $1 AND state = 'mounted'`, [
                created.body.uuid,
              ])
            ).length === 2,
          { timeoutMs: 30_000, what: 'mounted' },
        );
        expect(
          await apps.runJob({
            appUuid: writer,
            run: await runSpecOf(stack.ds, stack.secretBox, writer),
            command: `echo quarterly > ${mountRoot}/w/q1.txt && ls ${mountRoot}/w`,
          }),
        ).toEqual({ exitCode: 0, log: 'q1.txt\n' });
        expect(
          await apps.runJob({
            appUuid: reader,
            run: await runSpecOf(stack.ds, stack.secretBox, reader),
            command: `cat ${mountRoot}/r/reports/2026/q1.txt`,
          }),
        ).toEqual({
          exitCode: 0,
          log: 'quarterly\n',
        });
      } finally {
        rmSync(mountRoot, { recursive: true, force: true });
      }
    },
  );

  it("a cron job's stored output and exit code come from a real run, served by the log stream", async () => {
    const appUuid = await deployedApp({ REPORT_TARGET: 'weekly-digest' });

    const jobs = `/api/v1/apps/${appUuid}/cronjobs`;
    const created = await stack.http.post(jobs).set(owner()).send({
      label: 'digest',
      command: 'echo "sending $REPORT_TARGET as $(id -u)"; echo "no mail server" >&2; exit 3',
    });
    expect(created.status).toBe(201);
    const handle = stack.temporal.schedule.getHandle(`cronjob/${created.body.uuid}`);
    await eventually(async () => handle.describe().catch(() => null), { what: 'the schedule' });
    await handle.trigger();
    const runs = await eventually(
      async () => {
        const r = await stack.http.get(`${jobs}/${created.body.uuid}/logs`).set(owner());
        return r.body.length > 0 && r.body[0].finished_at ? r.body : null;
      },
      { timeoutMs: 30_000, what: 'a finished run' },
    );
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      exit_code: 3,
      log: `sending weekly-digest as ${isolation.uidSwitch ? appUid(appUuid) : process.getuid!()}\nno mail server\n`,
    });
  });
});
