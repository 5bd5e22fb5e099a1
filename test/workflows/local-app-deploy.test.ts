import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { LocalAppsDriver } from '../../activities/provider/local/apps/driver';
import { detectIsolation } from '../../activities/provider/local/sandbox/isolation';
import { auth, appWorkflowHarness, BIG_PLAN } from '../support/apps';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { FixtureBuilder, RecordingIngress, RecordingSink, tempLayout } from '../support/local-apps';
import { eventually, startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let h: Awaited<ReturnType<typeof appWorkflowHarness>>;
let ws: Workspace;
let temp: ReturnType<typeof tempLayout>;
let builder: FixtureBuilder;
let ingress: RecordingIngress;
let driver: LocalAppsDriver;
/** Longer than the one-minute timeout app steps once had. */
const SLOW_COPY_S = 70;
const slowCopy = () => path.join(temp.dataDir, 'slow-cp');

beforeAll(async () => {
  stack = await startStack();
  temp = tempLayout();
  const isolation = detectIsolation();
  builder = new FixtureBuilder(temp.layout, isolation.uidSwitch);
  ingress = new RecordingIngress();
  // a volume copy that takes longer than a minute (the copy is cp's own, only later)
  writeFileSync(slowCopy(), `#!/bin/sh\nsleep ${SLOW_COPY_S}\nexec cp "$@"\n`);
  chmodSync(slowCopy(), 0o755);
  driver = new LocalAppsDriver({
    dataSource: stack.ds,
    secretBox: stack.secretBox,
    layout: temp.layout,
    isolation,
    builder,
    ingress,
    events: new RecordingSink(),
    logger: stack.logger,
    host: '127.0.0.1',
    timing: { bootDeadlineMs: 15_000, stopGraceMs: 2000 },
    copyTool: slowCopy(),
  });
  stack.activityDeps.provider = { ...stack.activityDeps.provider, apps: driver };
  h = await appWorkflowHarness(stack);
  ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
});
afterAll(async () => {
  // delete removes the apps' cgroups too (close keeps them for a resume)
  for (const { app_uuid: uuid } of await stack.ds.query(`SELECT app_uuid FROM local_apps`)) await driver.delete(uuid);
  await driver?.close();
  await h?.close();
  await stack?.close();
  temp.cleanup();
});

const result = (appUuid: string, deploymentUuid: string) =>
  h.ts.client.workflow.getHandle(`app-deploy/${appUuid}/${deploymentUuid}`).result();

describe('deployments on the local driver', () => {
  it("EVT-02 APP-14 a release that exits at boot fails the deployment with the driver's reason; the old release keeps serving and the app stays running", async () => {
    await h.ts.withWorker(async () => {
      const res = await h.api
        .post('/api/v1/apps')
        .set(auth(ws.ownerToken))
        .send({ name: 'kept', resource_id: ws.resourceUuid, deployment_method: 'git_push' });
      expect(res.status).toBe(201);
      const app = res.body as { uuid: string };
      await eventually(async () => (await h.state(app.uuid)) === 'running', { what: 'the app running' });

      builder.fixtures.set(app.uuid, 'sup-web');
      const good = await h.api
        .post(`/api/v1/apps/${app.uuid}/deployments`)
        .set(auth(ws.ownerToken))
        .send({ commit_sha: 'aaaaaaa' });
      expect(good.status).toBe(202);
      expect(await result(app.uuid, good.body.uuid)).toBe('completed');
      const [port] = ingress.ports(app.uuid);
      expect(port).toBeGreaterThan(0);

      builder.fixtures.set(app.uuid, 'sup-crash');
      const bad = await h.api
        .post(`/api/v1/apps/${app.uuid}/deployments`)
        .set(auth(ws.ownerToken))
        .send({ commit_sha: 'bbbbbbb' });
      expect(await result(app.uuid, bad.body.uuid)).toBe('failed');
      const reason = 'the release exited at boot with code 1: sup-crash: cannot reach the database at 127.0.0.1:1';
      const shown = (await h.api.get(`/api/v1/apps/${app.uuid}/deployments/${bad.body.uuid}`).set(auth(ws.ownerToken)))
        .body;
      expect(shown).toMatchObject({ state: 'failed', message: reason });
      const ended = (await h.events(app.uuid)).filter((e) => e.type === 'deploy_ended');
      expect(ended.map((e) => e.data.message)).toEqual([null, reason]);
      expect(await h.state(app.uuid)).toBe('running');
      expect(ingress.ports(app.uuid)).toEqual([port]);
    });
  });

  it('a clone whose volume copy takes longer than a minute finishes: the copy heartbeats and runs once, never deleted by a retry', async () => {
    await h.ts.withWorker(async () => {
      const owner = auth(ws.ownerToken);
      const src = (
        await h.api
          .post('/api/v1/apps')
          .set(owner)
          .send({ name: 'bigvol', resource_id: ws.resourceUuid, deployment_method: 'git_push' })
          .expect(201)
      ).body as { uuid: string };
      await eventually(async () => (await h.state(src.uuid)) === 'running', { what: 'the source running' });
      const volume = temp.layout.volumeDir(src.uuid);
      mkdirSync(path.join(volume, 'uploads'), { recursive: true });
      writeFileSync(path.join(volume, 'uploads', 'kept.txt'), 'precious\n');

      const started = Date.now();
      const copy = (await h.api.post(`/api/v1/apps/${src.uuid}/clone`).set(owner).send({}).expect(201)).body as {
        uuid: string;
      };
      const handle = h.ts.client.workflow.getHandle(`app-clone/${copy.uuid}`);
      expect(await handle.result()).toMatchObject({ outcome: 'cloned' });
      expect(Date.now() - started).toBeGreaterThan(SLOW_COPY_S * 1000);
      expect(readFileSync(path.join(temp.layout.volumeDir(copy.uuid), 'uploads', 'kept.txt'), 'utf8')).toBe(
        'precious\n',
      );
      const { events } = await handle.fetchHistory();
      const copies = events!.filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'cloneAppVolume',
      );
      expect(copies).toHaveLength(1);
      const copyStarted = events!.find(
        (e) => e.activityTaskStartedEventAttributes?.scheduledEventId?.toString() === copies[0]!.eventId?.toString(),
      );
      expect(copyStarted?.activityTaskStartedEventAttributes?.attempt).toBe(1);
      await eventually(async () => (await h.state(copy.uuid)) === 'running', { what: 'the clone running' });
    });
  });
});
