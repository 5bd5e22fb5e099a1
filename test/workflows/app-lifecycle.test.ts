import { SimulatedAppsControl } from '../../activities/provider/simulated/apps';
import { auth, appWorkflowHarness, BIG_PLAN } from '../support/apps';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { eventually, startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let h: Awaited<ReturnType<typeof appWorkflowHarness>>;
let ws: Workspace;
let free: Workspace;

beforeAll(async () => {
  stack = await startStack();
  h = await appWorkflowHarness(stack);
  ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
  free = await seedWorkspace(stack.ds, { plan: { ...BIG_PLAN, plan_type: 'free' } });
});
afterAll(async () => {
  await h?.close();
  await stack?.close();
});

async function create(w: Workspace, name: string, extra: Record<string, unknown> = {}) {
  const res = await h.api
    .post('/api/v1/apps')
    .set(auth(w.ownerToken))
    .send({ name, resource_id: w.resourceUuid, ...extra });
  expect(res.status).toBe(201);
  return res.body as { uuid: string; name: string };
}

const until = (what: string, check: () => Promise<boolean>) => eventually(check, { what, timeoutMs: 30_000 });
const running = (uuid: string) => until(`app ${uuid} running`, async () => (await h.state(uuid)) === 'running');
const supervising = (uuid: string, state: string) =>
  until(
    `workflow of ${uuid} supervising ${state}`,
    async () => (await h.ts.client.workflow.getHandle(`app/${uuid}`).query<string>('state')) === `supervising:${state}`,
  );

describe('app workflow', () => {
  it('APP-13 APP-14 provisioning goes pending -> assigned -> start_scheduled -> started -> running through the driver', async () => {
    await h.ts.withWorker(async () => {
      const app = await create(ws, 'prov');
      await running(app.uuid);
      expect(await h.states(app.uuid)).toEqual(['pending', 'assigned', 'start_scheduled', 'started', 'running']);
      const [sim] = await stack.ds.query(`SELECT status, replicas FROM sim_apps WHERE app_uuid = $1`, [app.uuid]);
      expect(sim).toEqual({ status: 'running', replicas: 1 });
      // provisioning sends no app_state_changed: no person started it
      expect(await h.events(app.uuid)).toEqual([]);
    });
  });

  it("the workflow's state moves of an app are in the audit log (source workflow, actor system) and its activity feed", async () => {
    await h.ts.withWorker(async () => {
      const app = await create(ws, 'audited-moves');
      await running(app.uuid);
      const res = await h.api.get(`/api/v1/apps/${app.uuid}/activity`).set(auth(ws.ownerToken)).expect(200);
      const moves = (res.body as Array<Record<string, any>>)
        .filter((e) => e.kind === 'change' && e.source === 'workflow')
        .reverse();
      expect(moves.map((e) => `${e.type} ${e.diff.state.from}->${e.diff.state.to} ${e.actor.type}`)).toEqual([
        'app.state pending->assigned system',
        'app.state assigned->start_scheduled system',
        'app.state start_scheduled->started system',
        'app.state started->running system',
      ]);
    });
  });

  it('APP-14 the live status the driver reports (running, failed, problem) becomes the app state', async () => {
    await h.ts.withWorker(async () => {
      const bad = await create(ws, 'crashy');
      await SimulatedAppsControl.script(stack.ds, bad.uuid, { startStatus: 'problem' });
      await until('problem', async () => (await h.state(bad.uuid)) === 'problem');
      const app = await create(ws, 'live');
      await running(app.uuid);
      await supervising(app.uuid, 'running');
      expect(await h.report(app.uuid, 'status', { status: 'problem' })).toBe(202);
      await until('problem', async () => (await h.state(app.uuid)) === 'problem');
      expect(await h.report(app.uuid, 'status', { status: 'failed' })).toBe(202);
      await until('failed', async () => (await h.state(app.uuid)) === 'failed');
      expect(await h.report(app.uuid, 'status', { status: 'running' })).toBe(202);
      await running(app.uuid);
      expect(await h.report(app.uuid, 'status', { status: 'sideways' })).toBe(400);
    });
  });

  it('APP-18 EVT-04 EVT-05 a restart goes restart_scheduled then started, with app_state_changed for each (resource_name, labels)', async () => {
    await h.ts.withWorker(async () => {
      const app = await create(ws, 'restarty');
      await running(app.uuid);
      await supervising(app.uuid, 'running');
      const res = await h.api
        .patch(`/api/v1/apps/${app.uuid}/state`)
        .set(auth(ws.ownerToken))
        .send({ action: 'restart' });
      expect(res.status).toBe(202);
      expect(res.body.state).toBe('restart_scheduled');
      await until('restarted', async () => (await h.states(app.uuid)).length === 8);
      expect((await h.states(app.uuid)).slice(5)).toEqual(['restart_scheduled', 'started', 'running']);
      const [resource] = await stack.ds.query(`SELECT name, labels FROM compute_resources WHERE uuid = $1`, [
        ws.resourceUuid,
      ]);
      expect(await h.events(app.uuid)).toEqual([
        {
          type: 'app_state_changed',
          data: { app_id: app.uuid, state: 'restart_scheduled', resource_name: resource.name, labels: resource.labels },
        },
        {
          type: 'app_state_changed',
          data: { app_id: app.uuid, state: 'started', resource_name: resource.name, labels: resource.labels },
        },
      ]);
    });
  });

  it('EVT-04 a person stopping and starting an app sends app_state_changed stopped, then started', async () => {
    await h.ts.withWorker(async () => {
      const app = await create(ws, 'stopstart');
      await running(app.uuid);
      await supervising(app.uuid, 'running');
      expect(
        (await h.api.patch(`/api/v1/apps/${app.uuid}/state`).set(auth(ws.ownerToken)).send({ action: 'stop' })).body
          .state,
      ).toBe('stop_scheduled');
      await until('stopped', async () => (await h.state(app.uuid)) === 'stopped');
      expect((await stack.ds.query(`SELECT status FROM sim_apps WHERE app_uuid = $1`, [app.uuid]))[0].status).toBe(
        'stopped',
      );
      expect((await h.request(app.name)).status).toBe(503);
      expect(
        (await h.api.patch(`/api/v1/apps/${app.uuid}/state`).set(auth(ws.ownerToken)).send({ action: 'start' })).body
          .state,
      ).toBe('start_scheduled');
      await running(app.uuid);
      expect((await h.events(app.uuid)).map((e) => e.data.state)).toEqual(['stopped', 'started']);
      expect((await h.request(app.name)).status).toBe(200);
    });
  });

  it('EVT-06 EVT-05 health events from the driver reach the workflow and are emitted with app_id, resource_name and labels', async () => {
    await h.ts.withWorker(async () => {
      const app = await create(ws, 'healthy');
      await running(app.uuid);
      await supervising(app.uuid, 'running');
      const [resource] = await stack.ds.query(`SELECT name, labels FROM compute_resources WHERE uuid = $1`, [
        ws.resourceUuid,
      ]);
      const expected: Array<[string, string]> = [
        ['scaling_limit_reached', 'running'],
        ['app_unhealthy', 'problem'],
        ['app_crash_loop', 'failed'],
        ['app_stopped', 'stopped'],
      ];
      for (const [event, state] of expected) {
        expect(await h.report(app.uuid, 'health', { event, detail: `${event} detail` })).toBe(202);
        await until(event, async () => (await h.events(app.uuid)).some((e) => e.type === event));
        expect(await h.state(app.uuid)).toBe(state);
      }
      const events = await h.events(app.uuid);
      expect(events.map((e) => e.type)).toEqual(expected.map(([e]) => e));
      for (const e of events)
        expect(e.data).toEqual({
          app_id: app.uuid,
          resource_name: resource.name,
          labels: resource.labels,
          message: `${e.type} detail`,
        });
      // app_blocked: an app the platform blocked
      const blocked = await create(ws, 'blocked');
      await running(blocked.uuid);
      await supervising(blocked.uuid, 'running');
      await h.report(blocked.uuid, 'health', { event: 'app_blocked' });
      await until('app_blocked', async () => (await h.events(blocked.uuid)).length === 1);
      expect(await h.state(blocked.uuid)).toBe('blocked');
      expect((await h.events(blocked.uuid))[0]).toEqual({
        type: 'app_blocked',
        data: { app_id: blocked.uuid, resource_name: resource.name, labels: resource.labels },
      });
      expect(await h.report(blocked.uuid, 'health', { event: 'app_exploded' })).toBe(400);
    });
  });

  it('APP-15 APP-16 a free app sleeps after 30 minutes without traffic (scaled to zero, no event) and the first request wakes it with a 503', async () => {
    await h.ts.withWorker(async () => {
      const app = await create(free, 'dozy');
      await running(app.uuid);
      await supervising(app.uuid, 'running');
      await h.ts.env.sleep('20 minutes');
      expect(await h.state(app.uuid)).toBe('running');
      // traffic at minute 20 restarts the 30 minutes
      expect((await h.request(app.name)).status).toBe(200);
      await h.ts.env.sleep('20 minutes');
      expect(await h.state(app.uuid)).toBe('running');
      await h.ts.env.sleep('11 minutes');
      await until('sleeping', async () => (await h.state(app.uuid)) === 'sleeping');
      const [sim] = await stack.ds.query(`SELECT status, replicas FROM sim_apps WHERE app_uuid = $1`, [app.uuid]);
      expect(sim).toEqual({ status: 'scaled_to_zero', replicas: 0 });
      const wake = await h.request(app.name);
      expect(wake.status).toBe(503);
      expect(wake.headers['retry-after']).toBeDefined();
      await running(app.uuid);
      expect((await h.request(app.name)).status).toBe(200);
      expect((await h.states(app.uuid)).slice(4)).toEqual(['running', 'sleeping', 'started', 'running']);
      expect(await h.events(app.uuid)).toEqual([]);
      // a standard-plan app never sleeps
      const std = await create(ws, 'awake');
      await running(std.uuid);
      await supervising(std.uuid, 'running');
      await h.ts.env.sleep('2 hours');
      expect(await h.state(std.uuid)).toBe('running');
    });
  });

  it('APP-17 schedule_stop and schedule_start are accepted on a sleeping app', async () => {
    await h.ts.withWorker(async () => {
      const app = await create(free, 'sched');
      await running(app.uuid);
      await supervising(app.uuid, 'running');
      await h.ts.env.sleep('31 minutes');
      await until('sleeping', async () => (await h.state(app.uuid)) === 'sleeping');
      await supervising(app.uuid, 'sleeping');
      const stop = await h.api
        .patch(`/api/v1/apps/${app.uuid}/state`)
        .set(auth(free.ownerToken))
        .send({ action: 'schedule_stop' });
      expect(stop.status).toBe(202);
      await until('stopped', async () => (await h.state(app.uuid)) === 'stopped');
      // a stopped app is not woken by traffic
      expect((await h.request(app.name)).status).toBe(503);
      expect(await h.state(app.uuid)).toBe('stopped');
      await h.api
        .patch(`/api/v1/apps/${app.uuid}/state`)
        .set(auth(free.ownerToken))
        .send({ action: 'schedule_start' })
        .expect(202);
      await running(app.uuid);
      await supervising(app.uuid, 'running');
      await h.ts.env.sleep('31 minutes');
      await until('sleeping again', async () => (await h.state(app.uuid)) === 'sleeping');
      await supervising(app.uuid, 'sleeping');
      await h.api
        .patch(`/api/v1/apps/${app.uuid}/state`)
        .set(auth(free.ownerToken))
        .send({ action: 'schedule_start' })
        .expect(202);
      await running(app.uuid);
      expect((await h.events(app.uuid)).map((e) => e.data.state)).toEqual(['stopped', 'started', 'started']);
    });
  });

  it('APP-05 a private app is unreachable through the public ingress; basic auth is enforced on it', async () => {
    await h.ts.withWorker(async () => {
      const app = await create(ws, 'guarded', {
        basic_auth_enabled: true,
        basic_auth_username: 'alice',
        basic_auth_password: 'wonderland-42',
      });
      await running(app.uuid);
      expect((await h.request(app.name)).status).toBe(401);
      const basic = (u: string, p: string) => ({
        authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`,
      });
      expect((await h.request(app.name, basic('alice', 'wrong-password'))).status).toBe(401);
      expect((await h.request(app.name, basic('alice', 'wonderland-42'))).status).toBe(200);
      await h.api
        .put(`/api/v1/apps/${app.uuid}/security`)
        .set(auth(ws.ownerToken))
        .send({ private_access: true })
        .expect(200);
      expect((await h.request(app.name, basic('alice', 'wonderland-42'))).status).toBe(404);
    });
  });

  it('DELETE /apps/{uuid} ends the app workflow, tears the workload down and releases capacity and ports', async () => {
    await h.ts.withWorker(async () => {
      const app = await create(ws, 'doomed');
      await running(app.uuid);
      await h.api
        .post(`/api/v1/apps/${app.uuid}/ports`)
        .set(auth(ws.ownerToken))
        .send({ port: 5000, public: true })
        .expect(201);
      const del = await h.api.delete(`/api/v1/apps/${app.uuid}`).set(auth(ws.ownerToken));
      expect(del.status).toBe(202);
      expect(del.body.state).toBe('deleting');
      await until(
        'gone',
        async () => (await h.api.get(`/api/v1/apps/${app.uuid}`).set(auth(ws.ownerToken))).status === 404,
      );
      for (const table of ['sim_apps', 'app_ports']) {
        expect(await stack.ds.query(`SELECT 1 FROM ${table} WHERE app_uuid = $1`, [app.uuid])).toEqual([]);
      }
      expect(await stack.ds.query(`SELECT 1 FROM resource_allocations WHERE owner_uuid = $1`, [app.uuid])).toEqual([]);
      const handle = h.ts.client.workflow.getHandle(`app/${app.uuid}`);
      await handle.result();
      expect((await handle.describe()).status.name).toBe('COMPLETED');
    });
  });
});
