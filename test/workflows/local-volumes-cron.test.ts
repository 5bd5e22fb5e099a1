import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import path from 'node:path';
import { createDataActivities } from '../../activities/data';
import type { Provider } from '../../activities/provider/provider';
import { LocalAppsDriver } from '../../activities/provider/local/apps/driver';
import { createLocalData, type LocalData } from '../../activities/provider/local/data';
import { detectIsolation } from '../../activities/provider/local/sandbox/isolation';
import { mountVariable, volumeGid } from '../../activities/provider/local/apps/volumes';
import { appUid } from '../../platform/local-layout';
import { SecretBox } from '../../domain/secret-box';
import { createLogger } from '../../platform/logger';
import { freshDatabase, type TestDatabase } from '../support/db';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { insertApp } from '../support/app-rows';
import {
  FixtureBuilder,
  RecordingIngress,
  RecordingSink,
  tempLayout,
  runSpecOf,
  setAppVariables,
} from '../support/local-apps';
import { eventually } from '../support/stack';

const isolation = detectIsolation();
const namespaces = isolation.uidSwitch && isolation.mountNamespaces === true;
const itNs = namespaces ? it : it.skip;

function get(port: number, urlPath: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: urlPath, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

let db: TestDatabase;
let ws: Workspace;
let temp: ReturnType<typeof tempLayout>;
let builder: FixtureBuilder;
let ingress: RecordingIngress;
let apps: LocalAppsDriver;
let data: LocalData;
let activities: ReturnType<typeof createDataActivities>;
const secretBox = new SecretBox([{ kid: 't', key: randomBytes(32) }]);
const logger = createLogger('silent');
/** Mount points of this run (created on the host as empty folders: removed after). */
const mountRoot = `/tmp/berth-mnt-${randomBytes(4).toString('hex')}`;
const addonMounts: string[] = [];

beforeAll(async () => {
  db = await freshDatabase();
  ws = await seedWorkspace(db.ds);
  temp = tempLayout();
  builder = new FixtureBuilder(temp.layout, isolation.uidSwitch);
  ingress = new RecordingIngress();
  apps = new LocalAppsDriver({
    dataSource: db.ds,
    secretBox,
    layout: temp.layout,
    isolation,
    builder,
    ingress,
    events: new RecordingSink(),
    logger,
    host: '127.0.0.1',
    timing: { backoffInitialMs: 100, bootDeadlineMs: 15_000, stopGraceMs: 2000 },
    jobTimeLimitMs: 20_000,
  });
  data = createLocalData({
    dataSource: db.ds,
    secretBox,
    layout: temp.layout,
    isolation,
    logger,
    host: '127.0.0.1',
    jobs: apps,
  });
  activities = createDataActivities({
    dataSource: db.ds,
    logger,
    secretBox,
    provider: { data } as unknown as Provider,
    temporal: null as never,
    config: {} as never,
  });
});

afterAll(async () => {
  for (const { app_uuid: uuid } of await db.ds.query(`SELECT app_uuid FROM local_apps`)) await apps.delete(uuid);
  await apps.close();
  await data.close();
  await db.drop();
  temp.cleanup();
  rmSync(mountRoot, { recursive: true, force: true });
  for (const dir of addonMounts) rmSync(dir, { recursive: true, force: true });
  try {
    rmdirSync('/data'); // the mount points' parent, when this run made it and nothing else is in it
  } catch {
    // in use, or absent
  }
});

async function app(env: Record<string, string> = {}, deploy = true): Promise<string> {
  const { uuid } = await insertApp(db.ds, ws);
  await apps.provision({
    appUuid: uuid,
    name: 'a',
    resourceUuid: ws.resourceUuid,
    internalPort: 8080,
    cpuSize: 1,
    ramSize: 2 ** 29,
    diskSize: 2 ** 30,
    replicas: 1,
  });
  // the variables are the app's own in the control plane: cron runs get them from there too
  await setAppVariables(db.ds, secretBox, uuid, env);
  if (deploy) {
    await apps.rollout(uuid, builder.image(uuid, 'sup-web'), await runSpecOf(db.ds, secretBox, uuid));
    await eventually(async () => (await apps.status(uuid)) === 'running', {
      timeoutMs: 20_000,
      what: 'the app running',
    });
  }
  return uuid;
}

const port = (appUuid: string) => ingress.ports(appUuid)[0]!;

/** A storage add-on or service row provisioned on the local data driver (as addonProvision does). */
async function storage(
  options: { appUuid?: string; subPath?: string } = {},
): Promise<{ uuid: string; clusterId: string; name: string }> {
  const uuid = randomUUID();
  const name = `files-${randomBytes(4).toString('hex')}`;
  const settings = { access_mode: 'shared', ...(options.subPath ? { sub_path: options.subPath } : {}) };
  await db.ds.query(
    `INSERT INTO addons (uuid, workspace_uuid, kind, app_uuid, resource_uuid, type, name, label, state, settings, cluster_id)
     VALUES ($1, $2, $3, $4, $5, 'storage', $6, $6, 'bound', $7, $8)`,
    [
      uuid,
      ws.uuid,
      options.appUuid ? 'addon' : 'service',
      options.appUuid ?? null,
      ws.resourceUuid,
      name,
      JSON.stringify(settings),
      `c-${uuid}`,
    ],
  );
  await data.provision({
    id: `c-${uuid}`,
    engine: 'storage',
    cpuSize: 0.5,
    ramSize: 2 ** 29,
    publicAccess: false,
    backups: false,
    password: null,
  });
  if (options.subPath) await data.ensureSubPath(`c-${uuid}`, options.subPath);
  if (options.appUuid) addonMounts.push(`/data/${name}`);
  return { uuid, clusterId: `c-${uuid}`, name };
}

async function mount(
  serviceUuid: string,
  appUuid: string,
  mountPath: string,
  subPath: string | null = null,
): Promise<void> {
  await db.ds.query(
    `INSERT INTO service_mounts (uuid, service_uuid, app_uuid, mount_path, sub_path) VALUES ($1, $2, $3, $4, $5)`,
    [randomUUID(), serviceUuid, appUuid, mountPath, subPath],
  );
}

describe('storage volumes on the local driver (real processes)', () => {
  itNs(
    'ADD-08 a sub_path is visible at the mount path; a file written by one app is read by another; an app without the mount cannot read it',
    async () => {
      const svc = await storage();
      const [a, b, c] = [await app({}, false), await app({}, false), await app()];
      await mount(svc.uuid, a, `${mountRoot}/a/shared`, 'team/docs');
      await mount(svc.uuid, b, `${mountRoot}/b`);
      // a writes through its mount (a cron run of its release: the same fence as its replicas)
      await apps.rollout(a, builder.image(a, 'sup-web'), await runSpecOf(db.ds, secretBox, a));
      await eventually(async () => (await apps.status(a)) === 'running', { timeoutMs: 20_000, what: 'a running' });
      // the release folder is not writable; the mount is, and BERTH_MOUNT_<PATH> names it
      const notHere = await apps.runJob({
        appUuid: a,
        run: await runSpecOf(db.ds, secretBox, a),
        command: 'mkdir notes',
      });
      expect(notHere.exitCode).toBe(1);
      expect(notHere.log).toMatch(/Permission denied/);
      const variable = mountVariable(`${mountRoot}/a/shared`);
      const wrote = await apps.runJob({
        appUuid: a,
        run: await runSpecOf(db.ds, secretBox, a),
        command: `cd ${mountRoot}/a/shared && mkdir notes && echo from-a > notes/hello.txt && echo "$${variable}"`,
      });
      expect(wrote).toEqual({ exitCode: 0, log: `${mountRoot}/a/shared\n` });
      // the sub path is what a sees, and it is the volume's team/docs folder
      const real = path.join(temp.layout.volumeDir(svc.clusterId), 'team', 'docs', 'notes', 'hello.txt');
      expect(readFileSync(real, 'utf8')).toBe('from-a\n');
      expect(statSync(path.dirname(real)).gid).toBe(volumeGid(svc.clusterId));
      expect((await get(port(a), `/read?path=${mountRoot}/a/shared`)).body).toBe('notes');

      // b mounts the whole volume: its replica reads a's file, and b may write beside it
      await apps.rollout(b, builder.image(b, 'sup-web'), await runSpecOf(db.ds, secretBox, b));
      await eventually(async () => (await apps.status(b)) === 'running', { timeoutMs: 20_000, what: 'b running' });
      expect(await get(port(b), `/read?path=${mountRoot}/b/team/docs/notes/hello.txt`)).toEqual({
        status: 200,
        body: 'from-a\n',
      });
      expect(
        await apps.runJob({
          appUuid: b,
          run: await runSpecOf(db.ds, secretBox, b),
          command: `echo from-b >> ${mountRoot}/b/team/docs/notes/hello.txt`,
        }),
      ).toEqual({ exitCode: 0, log: '' });
      expect(
        (
          await apps.runJob({
            appUuid: a,
            run: await runSpecOf(db.ds, secretBox, a),
            command: `cat ${mountRoot}/a/shared/notes/hello.txt`,
          })
        ).log,
      ).toBe('from-a\nfrom-b\n');

      // c has no mount: the volume's folder is not in its view (or closed to its uid without one), and
      // b's mount point is not there (or an empty host folder)
      const closed = { status: 403, body: isolation.view ? 'ENOENT' : 'EACCES' };
      expect(await get(port(c), `/read?path=${encodeURIComponent(real)}`)).toEqual(closed);
      expect(await get(port(c), `/read?path=${temp.layout.volumeDir(svc.clusterId)}`)).toEqual(closed);
      expect(await get(port(c), `/read?path=${mountRoot}/b`)).toEqual(
        isolation.view ? { status: 403, body: 'ENOENT' } : { status: 200, body: '' },
      );

      // a link an app leaves in the volume does not lead Berth out of it when it makes a sub path
      const target = `${mountRoot}-outside`;
      expect(
        (
          await apps.runJob({
            appUuid: b,
            run: await runSpecOf(db.ds, secretBox, b),
            command: `ln -s ${target} ${mountRoot}/b/escape`,
          })
        ).exitCode,
      ).toBe(0);
      await expect(data.ensureSubPath(svc.clusterId, 'escape/made')).rejects.toThrow(
        /sub_path escape\/made of volume .* is not a folder: escape is a file or a link/,
      );
      expect(existsSync(target)).toBe(false);
    },
  );

  itNs("an app's own storage add-on is at /data/<add-on name>, its sub_path created if missing", async () => {
    const a = await app({}, false);
    const vol = await storage({ appUuid: a, subPath: 'uploads/images' });
    await apps.rollout(a, builder.image(a, 'sup-web'), await runSpecOf(db.ds, secretBox, a));
    await eventually(async () => (await apps.status(a)) === 'running', { timeoutMs: 20_000, what: 'a running' });
    const run = await apps.runJob({
      appUuid: a,
      run: await runSpecOf(db.ds, secretBox, a),
      command: `echo pixel > /data/${vol.name}/cat.png && ls /data/${vol.name}`,
    });
    expect(run).toEqual({ exitCode: 0, log: 'cat.png\n' });
    expect(readFileSync(path.join(temp.layout.volumeDir(vol.clusterId), 'uploads', 'images', 'cat.png'), 'utf8')).toBe(
      'pixel\n',
    );
    expect((await get(port(a), `/read?path=/data/${vol.name}`)).body).toBe('cat.png');
  });

  it("CLN-02 clone_data copies a storage volume into the copy's own volume; delete removes it", async () => {
    const src = await app({}, false);
    const vol = await storage({ appUuid: src, subPath: 'keep' });
    const target = await app({}, false);
    const file = (clusterId: string) => path.join(temp.layout.volumeDir(clusterId), 'keep', 'kept.txt');
    await apps.rollout(src, builder.image(src, 'sup-web'), await runSpecOf(db.ds, secretBox, src));
    await eventually(async () => (await apps.status(src)) === 'running', { timeoutMs: 20_000, what: 'src running' });
    const where = `"$${mountVariable(`/data/${vol.name}`)}"`;
    expect(
      (
        await apps.runJob({
          appUuid: src,
          run: await runSpecOf(db.ds, secretBox, src),
          command: `echo precious > ${where}/kept.txt`,
        })
      ).exitCode,
    ).toBe(0);

    const copyUuid = randomUUID();
    await activities.cloneAddon({ sourceUuid: vol.uuid, targetAppUuid: target, targetUuid: copyUuid, withData: true });
    expect(readFileSync(file(`c-${copyUuid}`), 'utf8')).toBe('precious\n');
    if (isolation.uidSwitch) expect(statSync(file(`c-${copyUuid}`)).gid).toBe(volumeGid(`c-${copyUuid}`));
    const emptyUuid = randomUUID();
    await activities.cloneAddon({
      sourceUuid: vol.uuid,
      targetAppUuid: target,
      targetUuid: emptyUuid,
      withData: false,
    });
    expect(existsSync(file(`c-${emptyUuid}`))).toBe(false);

    await data.delete(`c-${copyUuid}`);
    expect(existsSync(temp.layout.volumeDir(`c-${copyUuid}`))).toBe(false);
    expect(readFileSync(file(vol.clusterId), 'utf8')).toBe('precious\n');
  });
});

describe('cron runs on the local driver', () => {
  async function cronjob(appUuid: string, command: string): Promise<string> {
    const uuid = randomUUID();
    await db.ds.query(
      `INSERT INTO addons (uuid, workspace_uuid, kind, app_uuid, resource_uuid, type, name, label, state, settings)
       VALUES ($1, $2, 'addon', $3, $4, 'cronjob', $5, 'nightly', 'running', $6)`,
      [
        uuid,
        ws.uuid,
        appUuid,
        ws.resourceUuid,
        `cronjob-${randomBytes(4).toString('hex')}`,
        JSON.stringify({ schedule_type: 'interval', interval: 60, command }),
      ],
    );
    return uuid;
  }
  const runsOf = (uuid: string) =>
    db.ds.query(`SELECT exit_code, log, finished_at FROM cronjob_runs WHERE cronjob_uuid = $1`, [uuid]);

  it("a cron job's stored output and exit code come from a real run in the app's release with its environment", async () => {
    const a = await app({ CRON_GREETING: 'hello-from-the-rollout' });
    const job = await cronjob(
      a,
      'echo "greeting=$CRON_GREETING uid=$(id -u) cwd=$(pwd)"; echo "path=$PATH" | cut -d: -f1; echo to-stderr >&2; exit 3',
    );
    expect(await activities.runCronJob(job)).toBe(3);
    const [run] = await runsOf(job);
    expect(run.exit_code).toBe(3);
    const release = (await db.ds.query(`SELECT release_id FROM local_apps WHERE app_uuid = $1`, [a]))[0].release_id;
    const releaseDir = temp.layout.releaseDir(a, release);
    const [line1, line2, line3] = run.log.split('\n');
    expect(line1).toBe(
      `greeting=hello-from-the-rollout uid=${isolation.uidSwitch ? appUid(a) : process.getuid!()} cwd=${releaseDir}`,
    );
    expect(line2).toBe(`path=${path.join(releaseDir, 'node_modules/.bin')}`);
    expect(line3).toBe('to-stderr');
  });

  it('the log keeps the last 64 KiB of the output; a run past its time limit is killed (124)', async () => {
    const a = await app();
    const big = await apps.runJob({
      appUuid: a,
      run: await runSpecOf(db.ds, secretBox, a),
      command: 'head -c 200000 /dev/zero | tr "\\0" x; echo; echo the-end',
    });
    expect(big.exitCode).toBe(0);
    expect(big.log).toMatch(/^\[\d+ earlier bytes of output omitted\]\nx+\nthe-end\n$/);
    expect(Buffer.byteLength(big.log)).toBeLessThan(64 * 1024 + 100);
    const quick = new LocalAppsDriver({
      dataSource: db.ds,
      secretBox,
      layout: temp.layout,
      isolation,
      builder,
      ingress: new RecordingIngress(),
      events: new RecordingSink(),
      logger,
      host: '127.0.0.1',
      jobTimeLimitMs: 500,
    });
    const slow = await quick.runJob({
      appUuid: a,
      run: await runSpecOf(db.ds, secretBox, a),
      command: 'echo started; sleep 30',
    });
    expect(slow.exitCode).toBe(124);
    expect(slow.log).toBe('started\n\nkilled: the run exceeded its time limit of 1 s\n');
  });

  it('an app without a release: the run fails clearly and the log stream says why', async () => {
    const a = await app({}, false);
    const job = await cronjob(a, 'echo never');
    await expect(activities.runCronJob(job)).rejects.toThrow(
      /has no release yet: deploy it before its cron jobs can run/,
    );
    const [run] = await runsOf(job);
    expect(run.exit_code).toBeNull();
    expect(run.finished_at).not.toBeNull();
    expect(run.log).toMatch(/^the run did not start: app .* has no release yet/);
  });
});
