import { createActivities } from '../../activities';
import { effectiveEnvironment } from '../../activities/app-environment';
import { loadAppAddons } from '../../api/views/addons';
import { UNHEALTHY_STATES } from '../../domain/data';
import { insertApp, simData, clusterOf } from '../support/data';
import { memberWith, seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { eventually, expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let ws: Workspace;
let appUuid: string;
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });
const owner = () => auth(ws.ownerToken);

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
  appUuid = await insertApp(stack.ds, ws);
  await stack.startWorker();
});
afterAll(() => stack.close());

async function addon(body: Record<string, unknown>, app = appUuid) {
  const res = await stack.http.post(`/api/v1/apps/${app}/addons`).set(owner()).send(body);
  expect(res.status).toBe(201);
  return res.body;
}
async function live(uuid: string, app = appUuid, state = /^(healthy|bound)$/) {
  return eventually(
    async () => {
      const res = await stack.http.get(`/api/v1/apps/${app}/addons/${uuid}`).set(owner());
      return state.test(res.body.state) ? res.body : null;
    },
    { what: `add-on ${uuid} live` },
  );
}

describe('add-ons attached to apps', () => {
  it('ADD-01 ADD-13 ADD-03 ADD-05 a postgres add-on is created pending, provisions to healthy and carries the contract fields', async () => {
    const created = await addon({ type: 'postgres', label: 'Main DB' });
    expect(created).toMatchObject({ type: 'postgres', label: 'Main DB', state: 'pending' });
    for (const f of ['uuid', 'name', 'type', 'label', 'state', 'quota', 'settings', 'var', 'created_at', 'updated_at'])
      expect(created).toHaveProperty(f);
    const shown = await live(created.uuid);
    expect(shown.state).toBe('healthy');
    const internal = shown.connection_details.internal;
    expect(Object.keys(internal).sort()).toEqual([
      'connection_url',
      'database',
      'hostname',
      'password',
      'port',
      'username',
    ]);
    expect(internal.port).toBe(5432);
    expect(Number.isInteger(internal.port)).toBe(true);
    expect(internal.password).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(internal.connection_url).toBe(
      `postgresql://${internal.username}:${internal.password}@${internal.hostname}:5432/${internal.database}`,
    );
    expect(shown.var.DATABASE_URL).toBe(internal.connection_url);
    expect(shown.var.PGPASSWORD).toBe(internal.password);
    expect(Object.keys(shown.connection_details.external).sort()).toEqual(['external_connection_url', 'psql_command']);
    // The password is sealed at rest, and the cluster got only its hash.
    const [row] = await stack.ds.query(`SELECT password_sealed FROM addons WHERE uuid = $1`, [created.uuid]);
    expect(row.password_sealed).not.toContain(internal.password);
    expect(stack.secretBox.open(row.password_sealed)).toBe(internal.password);
    const cluster = await simData(stack).clusterInfo(await clusterOf(stack.ds, created.uuid));
    expect(cluster!.password_hash).toMatch(/^[0-9a-f]{64}$/);
    // Never in logs nor in the provisioning workflow's history.
    expectNoSecretLeaks(stack, [internal.password], { allowInResponses: [internal.password] });
    const history = await stack.temporal.workflow.getHandle(`addon-provision/${created.uuid}`).fetchHistory();
    expect(JSON.stringify(history)).not.toContain(internal.password);
  });

  it('ADD-01 ADD-03 mysql and valkey go healthy, storage goes bound', async () => {
    for (const [type, state, port] of [
      ['mysql', 'healthy', 3306],
      ['valkey', 'healthy', 6379],
      ['storage', 'bound', null],
    ] as const) {
      const created = await addon({ type });
      const shown = await live(created.uuid);
      expect(shown.state).toBe(state);
      if (port) expect(shown.connection_details.internal.port).toBe(port);
      else expect(shown.connection_details).toBeNull();
    }
    const bad = await stack.http.post(`/api/v1/apps/${appUuid}/addons`).set(owner()).send({ type: 'mongodb' });
    expect(bad.status).toBe(400);
  });

  it('ADD-03 running when the status is unavailable; ADD-04 unhealthy values reported by the driver are the state', async () => {
    const created = await addon({ type: 'postgres' });
    await live(created.uuid);
    const cluster = await clusterOf(stack.ds, created.uuid);
    const acts = createActivities(stack.activityDeps);
    await simData(stack).setStatus(cluster, 'unknown');
    await acts.refreshAddonStatus(created.uuid);
    expect((await stack.http.get(`/api/v1/apps/${appUuid}/addons/${created.uuid}`).set(owner())).body.state).toBe(
      'running',
    );
    for (const status of UNHEALTHY_STATES) {
      await simData(stack).setStatus(cluster, status);
      await acts.refreshAddonStatus(created.uuid);
      expect((await stack.http.get(`/api/v1/apps/${appUuid}/addons/${created.uuid}`).set(owner())).body.state).toBe(
        status,
      );
    }
    await simData(stack).setStatus(cluster, 'live');
    await acts.refreshAddonStatus(created.uuid);
    expect((await stack.http.get(`/api/v1/apps/${appUuid}/addons/${created.uuid}`).set(owner())).body.state).toBe(
      'healthy',
    );
  });

  it('ADD-04 the health sweep (a Temporal Schedule every minute) records the status the driver reports', async () => {
    const created = await addon({ type: 'valkey' });
    await live(created.uuid);
    const cluster = await clusterOf(stack.ds, created.uuid);
    const schedule = stack.temporal.schedule.getHandle(`addon-health/${stack.taskQueue}`);
    const desc = await schedule.describe();
    expect(desc.spec.intervals?.map((i) => i.every)).toEqual([60000]);
    expect(desc.action).toMatchObject({ workflowType: 'addonHealthSweep' });
    // Sweeps until the add-on reads the state. A trigger can come to nothing: one while a
    // sweep runs is skipped (overlap policy), and one in the same second as the minute's
    // own run collides with it (the run's id carries the second), after which that run may
    // have read the status before it changed. So a sweep is triggered again while none runs.
    const sweepUntil = (state: RegExp) =>
      eventually(
        async () => {
          const res = await stack.http.get(`/api/v1/apps/${appUuid}/addons/${created.uuid}`).set(owner());
          if (state.test(res.body.state)) return res.body;
          if ((await schedule.describe()).info.runningActions.length === 0) await schedule.trigger();
          return null;
        },
        { what: `add-on ${created.uuid} ${state}`, intervalMs: 500, timeoutMs: 30_000 },
      );
    await simData(stack).setStatus(cluster, 'lost');
    await sweepUntil(/^lost$/);
    await simData(stack).setStatus(cluster, 'live');
    await sweepUntil(/^(healthy|bound)$/);
  });

  it("ADD-02 CRN-05 GET /apps/{uuid}/addons excludes cron jobs, which are listed in the app's cronjobs", async () => {
    const app = await insertApp(stack.ds, ws);
    const db = await addon({ type: 'valkey' }, app);
    const job = await stack.http
      .post(`/api/v1/apps/${app}/cronjobs`)
      .set(owner())
      .send({ label: 'nightly', command: 'rake cleanup' });
    expect(job.status).toBe(201);
    const list = await stack.http.get(`/api/v1/apps/${app}/addons`).set(owner());
    expect(list.status).toBe(200);
    expect(list.body.map((a: { uuid: string }) => a.uuid)).toEqual([db.uuid]);
    const jobs = await stack.http.get(`/api/v1/apps/${app}/cronjobs`).set(owner());
    expect(jobs.body.map((a: { uuid: string }) => a.uuid)).toEqual([job.body.uuid]);
    expect(jobs.body[0]).toMatchObject({ type: 'cronjob', label: 'nightly' });
    const loaded = await loadAppAddons(stack.ds.manager, stack.secretBox, [app, appUuid]);
    expect(loaded.get(app)!.addons.map((a) => a.uuid)).toEqual([db.uuid]);
    expect(loaded.get(app)!.cronjobs.map((a) => a.uuid)).toEqual([job.body.uuid]);
    expect(loaded.get(appUuid)!.cronjobs).toEqual([]);
  });

  it('APP-10 ADD-02 CRN-05 GET /apps/{uuid} shows exactly the add-ons and cron jobs their own lists show, newest first', async () => {
    const app = await insertApp(stack.ds, ws);
    const first = await addon({ type: 'postgres' }, app);
    const second = await addon({ type: 'valkey' }, app);
    const job = await stack.http
      .post(`/api/v1/apps/${app}/cronjobs`)
      .set(owner())
      .send({ label: 'hourly', command: 'rake stats' });
    expect(job.status).toBe(201);
    await live(first.uuid, app);
    await live(second.uuid, app); // settled: nothing changes between the three reads
    const shown = await stack.http.get(`/api/v1/apps/${app}`).set(owner());
    expect(shown.status).toBe(200);
    const list = await stack.http.get(`/api/v1/apps/${app}/addons`).set(owner());
    const jobs = await stack.http.get(`/api/v1/apps/${app}/cronjobs`).set(owner());
    expect(shown.body.addons.map((a: { uuid: string }) => a.uuid)).toEqual([second.uuid, first.uuid]);
    expect(shown.body.addons).toEqual(list.body);
    expect(shown.body.cronjobs).toEqual(jobs.body);
    expect(shown.body.cronjobs.map((a: { uuid: string }) => a.uuid)).toEqual([job.body.uuid]);
  });

  it('public access toggling (apps:operate) changes connection_details.external and the cluster', async () => {
    const created = await addon({ type: 'postgres' });
    const before = await live(created.uuid);
    expect(before.connection_details.external).toEqual({ external_connection_url: null, psql_command: null });
    const viewer = await tokenWith(stack.ds, ws.uuid, ['apps:view', 'apps:manage']);
    expect(
      (
        await stack.http
          .post(`/api/v1/apps/${appUuid}/addons/${created.uuid}/public_access`)
          .set(auth(viewer))
          .send({ public_access: true })
      ).status,
    ).toBe(403);
    const operator = await tokenWith(stack.ds, ws.uuid, ['apps:operate']);
    const on = await stack.http
      .post(`/api/v1/apps/${appUuid}/addons/${created.uuid}/public_access`)
      .set(auth(operator))
      .send({ public_access: '1' });
    expect(on.status).toBe(200);
    expect(on.body.public_access).toBe(true);
    expect(on.body.connection_details.external.external_connection_url).toMatch(/^postgresql:\/\/.+\.db\..+:5432\//);
    expect(on.body.connection_details.external.psql_command).toBe(
      `psql "${on.body.connection_details.external.external_connection_url}"`,
    );
    const cluster = await clusterOf(stack.ds, created.uuid);
    await eventually(async () => (await simData(stack).clusterInfo(cluster))!.public_access === true, {
      what: 'cluster public',
    });
    const off = await stack.http
      .post(`/api/v1/apps/${appUuid}/addons/${created.uuid}/public_access`)
      .set(auth(operator))
      .send({ public_access: false });
    expect(off.body.connection_details.external.external_connection_url).toBeNull();
    await eventually(async () => (await simData(stack).clusterInfo(cluster))!.public_access === false, {
      what: 'cluster private',
    });
  });

  it('ADD-06 ADD-07 a read replica of postgres with cpu_size and ram_size shares credentials, the resource and public access', async () => {
    const primary = await addon({ type: 'postgres', public_access: true });
    const p = await live(primary.uuid);
    const res = await stack.http
      .post(`/api/v1/apps/${appUuid}/addons/${primary.uuid}/create_replica`)
      .set(owner())
      .send({ cpu_size: 1, ram_size: 2147483648 });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      type: 'postgres',
      replica_of: primary.uuid,
      resource_id: p.resource_id,
      public_access: true,
    });
    expect(res.body.quota).toMatchObject({ cpu_size: 1, ram_size: 2147483648 });
    const replica = await live(res.body.uuid);
    expect(replica.connection_details.internal.password).toBe(p.connection_details.internal.password);
    expect(replica.connection_details.internal.username).toBe(p.connection_details.internal.username);
    expect(replica.connection_details.external.external_connection_url).not.toBeNull();
    const info = await simData(stack).clusterInfo(await clusterOf(stack.ds, res.body.uuid));
    expect(info).toMatchObject({
      replica_of: await clusterOf(stack.ds, primary.uuid),
      cpu_size: 1,
      public_access: true,
    });
    // Public access follows the primary.
    await stack.http
      .post(`/api/v1/apps/${appUuid}/addons/${primary.uuid}/public_access`)
      .set(owner())
      .send({ public_access: false });
    const after = await stack.http.get(`/api/v1/apps/${appUuid}/addons/${res.body.uuid}`).set(owner());
    expect(after.body.public_access).toBe(false);
    expect(after.body.connection_details.external.external_connection_url).toBeNull();
    // postgres only
    const cache = await addon({ type: 'valkey' });
    const refused = await stack.http
      .post(`/api/v1/apps/${appUuid}/addons/${cache.uuid}/create_replica`)
      .set(owner())
      .send({ cpu_size: 1, ram_size: 1024 });
    expect(refused.status).toBe(422);
    expect(refused.body.detail).toMatch(/postgres only/);
    const missing = await stack.http
      .post(`/api/v1/apps/${appUuid}/addons/${primary.uuid}/create_replica`)
      .set(owner())
      .send({ cpu_size: 1 });
    expect(missing.status).toBe(400);
  });

  it("ADD-08 a storage add-on's sub_path is created if missing", async () => {
    const created = await addon({ type: 'storage', sub_path: 'data/uploads' });
    await live(created.uuid);
    expect(await simData(stack).dirs(await clusterOf(stack.ds, created.uuid))).toEqual(['data/uploads']);
    expect(created.settings).toMatchObject({ sub_path: 'data/uploads', access_mode: 'shared' });
  });

  const subPaths: Array<[string, number]> = [
    ['data', 201],
    ['a/b', 201],
    ['/abs', 422],
    ['../x', 422],
    ['a/../b', 422],
    ['./a', 422],
    ['a\\b', 422],
  ];
  it.each(subPaths)('ADD-09 sub_path %j answers %i', async (subPath, status) => {
    const before = await stack.ds.query(`SELECT count(*)::int AS n FROM addons`);
    const res = await stack.http
      .post(`/api/v1/apps/${appUuid}/addons`)
      .set(owner())
      .send({ type: 'storage', sub_path: subPath });
    expect(res.status).toBe(status);
    if (status === 422) {
      expect(res.body.errors[0].path).toBe('body.sub_path');
      expect((await stack.ds.query(`SELECT count(*)::int AS n FROM addons`))[0].n).toBe(before[0].n);
    }
  });

  it('ADD-10 sub_path is accepted only for shared (RWX) access', async () => {
    const res = await stack.http
      .post(`/api/v1/apps/${appUuid}/addons`)
      .set(owner())
      .send({ type: 'storage', sub_path: 'data', access_mode: 'exclusive' });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/shared \(RWX\)/);
    expect(
      (
        await stack.http
          .post(`/api/v1/apps/${appUuid}/addons`)
          .set(owner())
          .send({ type: 'storage', access_mode: 'exclusive' })
      ).status,
    ).toBe(201);
    expect(
      (
        await stack.http
          .post(`/api/v1/apps/${appUuid}/addons`)
          .set(owner())
          .send({ type: 'postgres', sub_path: 'data' })
      ).status,
    ).toBe(422);
  });

  it('ADD-11 reset_database really drops the data (and says so); DELETE removes the add-on and its cluster', async () => {
    const created = await addon({ type: 'postgres' });
    await live(created.uuid);
    const cluster = await clusterOf(stack.ds, created.uuid);
    await simData(stack).writeRow(cluster, 'users/1', 'ada');
    await simData(stack).writeRow(cluster, 'users/2', 'grace');
    expect(await simData(stack).readRows(cluster)).toEqual({ 'users/1': 'ada', 'users/2': 'grace' });
    const viewer = await tokenWith(stack.ds, ws.uuid, ['apps:operate']);
    expect(
      (await stack.http.post(`/api/v1/apps/${appUuid}/addons/${created.uuid}/reset_database`).set(auth(viewer))).status,
    ).toBe(403);
    const reset = await stack.http.post(`/api/v1/apps/${appUuid}/addons/${created.uuid}/reset_database`).set(owner());
    expect(reset.status).toBe(202);
    expect(reset.body.message).toMatch(/destructive: the data does not come back/);
    await live(created.uuid);
    await eventually(async () => Object.keys(await simData(stack).readRows(cluster)).length === 0, {
      what: 'data dropped',
    });
    expect(await stack.ds.query(`SELECT 1 FROM sim_data_rows WHERE cluster_id = $1`, [cluster])).toHaveLength(0);

    const del = await stack.http.delete(`/api/v1/apps/${appUuid}/addons/${created.uuid}`).set(owner());
    expect(del.status).toBe(202);
    expect(del.body.message).toMatch(/destructive: the data does not come back/);
    expect((await stack.http.get(`/api/v1/apps/${appUuid}/addons/${created.uuid}`).set(owner())).status).toBe(404);
    await eventually(
      async () => (await stack.ds.query(`SELECT 1 FROM sim_data_clusters WHERE id = $1`, [cluster])).length === 0,
      { what: 'cluster deleted' },
    );
    await eventually(
      async () => (await stack.ds.query(`SELECT 1 FROM addons WHERE uuid = $1`, [created.uuid])).length === 0,
      { what: 'row deleted' },
    );
  });

  it('ADD-03 PATCH .../state stops an add-on (stopped, data kept) and starts it again (creating, then healthy)', async () => {
    const created = await addon({ type: 'postgres' });
    await live(created.uuid);
    const cluster = await clusterOf(stack.ds, created.uuid);
    await simData(stack).writeRow(cluster, 'keep', 'me');
    const viewer = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    expect(
      (
        await stack.http
          .patch(`/api/v1/apps/${appUuid}/addons/${created.uuid}/state`)
          .set(auth(viewer))
          .send({ action: 'stop' })
      ).status,
    ).toBe(403);
    const stop = await stack.http
      .patch(`/api/v1/apps/${appUuid}/addons/${created.uuid}/state`)
      .set(owner())
      .send({ action: 'stop' });
    expect(stop.status).toBe(200);
    expect(stop.body.state).toBe('stopped');
    await eventually(async () => (await simData(stack).clusterInfo(cluster))!.running === false, {
      what: 'cluster stopped',
    });
    expect(
      (
        await stack.http
          .patch(`/api/v1/apps/${appUuid}/addons/${created.uuid}/state`)
          .set(owner())
          .send({ action: 'stop' })
      ).status,
    ).toBe(409);
    const start = await stack.http
      .patch(`/api/v1/apps/${appUuid}/addons/${created.uuid}/state`)
      .set(owner())
      .send({ action: 'start' });
    expect(start.body.state).toBe('creating');
    await live(created.uuid);
    expect((await simData(stack).clusterInfo(cluster))!.running).toBe(true);
    expect(await simData(stack).readRows(cluster)).toEqual({ keep: 'me' });
    expect(
      (
        await stack.http
          .patch(`/api/v1/apps/${appUuid}/addons/${created.uuid}/state`)
          .set(owner())
          .send({ action: 'pause' })
      ).status,
    ).toBe(400);
  });

  it("an app's environment carries its add-ons' var (its own variables win); creating or deleting an add-on marks the app needs_redeploy", async () => {
    const app = await insertApp(stack.ds, ws);
    const env = () => effectiveEnvironment(stack.ds, stack.activityDeps.secretBox, app);
    const needsRedeploy = async () =>
      (await stack.http.get(`/api/v1/apps/${app}`).set(owner()).expect(200)).body.needs_redeploy;
    const settle = () => stack.ds.query(`UPDATE apps SET needs_redeploy_since = NULL WHERE uuid = $1`, [app]); // as a deployment does
    expect(await needsRedeploy()).toBe(false);

    const db = await live((await addon({ type: 'postgres' }, app)).uuid, app);
    expect(await needsRedeploy()).toBe(true);
    expect(db.var.DATABASE_URL).toBe(db.connection_details.internal.connection_url);
    expect(await env()).toEqual(db.var);
    // the password is sealed at rest and in no operation's arguments
    const [row] = await stack.ds.query(`SELECT password_sealed FROM addons WHERE uuid = $1`, [db.uuid]);
    expect(row.password_sealed).not.toContain(db.var.PGPASSWORD);
    expect(JSON.stringify(await stack.ds.query(`SELECT args, signal_args FROM operations`))).not.toContain(
      db.var.PGPASSWORD,
    );

    // a second database keeps DATABASE_URL on the first; a cache adds its own keys; a replica adds nothing
    await settle();
    const second = await live((await addon({ type: 'postgres' }, app)).uuid, app);
    const cache = await live((await addon({ type: 'valkey' }, app)).uuid, app);
    await stack.http
      .post(`/api/v1/apps/${app}/addons/${db.uuid}/create_replica`)
      .set(owner())
      .send({ cpu_size: 0.5, ram_size: 2 ** 29 })
      .expect(201);
    expect(await needsRedeploy()).toBe(true);
    expect(await env()).toEqual({ ...cache.var, ...db.var });
    expect((await env()).DATABASE_URL).not.toBe(second.var.DATABASE_URL);

    // the app's own variable wins over an add-on's
    await stack.http
      .put(`/api/v1/apps/${app}/variables`)
      .set(owner())
      .send({ variables: [{ key: 'PGHOST', value: 'pooler.internal' }] })
      .expect(200);
    expect((await env()).PGHOST).toBe('pooler.internal');

    // the rollout hands them to the data plane
    await stack.ds.query(`INSERT INTO sim_apps (app_uuid) VALUES ($1) ON CONFLICT DO NOTHING`, [app]);
    await createActivities(stack.activityDeps).rolloutImage(app, 'registry.local/addon-vars:1');
    const [sim] = await stack.ds.query(`SELECT env_keys FROM sim_apps WHERE app_uuid = $1`, [app]);
    expect(sim.env_keys).toEqual(
      expect.arrayContaining(['DATABASE_URL', 'PGPASSWORD', 'REDIS_URL', 'VALKEY_PASSWORD']),
    );

    // deleting the first database: its variables leave, the second's take over, and the app is marked again
    await settle();
    await stack.http.delete(`/api/v1/apps/${app}/addons/${db.uuid}`).set(owner()).expect(202);
    expect(await needsRedeploy()).toBe(true);
    expect((await env()).DATABASE_URL).toBe(second.var.DATABASE_URL);
    expect(await env()).not.toHaveProperty('PGPASSWORD', db.var.PGPASSWORD);
    // another app's add-ons are not this app's
    await settle();
    await addon({ type: 'mysql' });
    expect(await needsRedeploy()).toBe(false);
    expect(await env()).not.toHaveProperty('MYSQL_URL');
  });

  it('checks the app: unknown app 404, app in a project closed to the caller 404', async () => {
    expect((await stack.http.get(`/api/v1/apps/00000000-0000-4000-8000-000000000001/addons`).set(owner())).status).toBe(
      404,
    );
    const other = await seedWorkspace(stack.ds);
    const foreign = await insertApp(stack.ds, other);
    expect((await stack.http.get(`/api/v1/apps/${foreign}/addons`).set(owner())).status).toBe(404);
    expect(
      (await stack.http.post(`/api/v1/apps/${foreign}/addons`).set(owner()).send({ type: 'postgres' })).status,
    ).toBe(404);
    const [project] = await stack.ds.query(
      `INSERT INTO projects (uuid, workspace_uuid, name) VALUES (gen_random_uuid(), $1, 'secret') RETURNING uuid`,
      [ws.uuid],
    );
    const hiddenApp = await insertApp(stack.ds, ws, { projectId: project.uuid });
    const member = await memberWith(stack.ds, ws.uuid, 'ops', ['apps:view', 'apps:operate']);
    await stack.ds.query(
      `INSERT INTO project_restrictions (project_uuid, subject_type, role_name) VALUES ($1, 'role', 'admin')`,
      [project.uuid],
    );
    expect((await stack.http.get(`/api/v1/apps/${hiddenApp}/addons`).set(auth(member.token))).status).toBe(404);
    expect((await stack.http.get(`/api/v1/apps/${hiddenApp}/cronjobs`).set(auth(member.token))).status).toBe(404);
    expect((await stack.http.get(`/api/v1/apps/${hiddenApp}/addons`).set(owner())).status).toBe(200);
  });
});
