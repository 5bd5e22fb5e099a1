import { createActivities } from '../../activities';
import { SimulatedCore } from '../../activities/provider/simulated';
import { insertApp, simData, clusterOf } from '../support/data';
import { createResource, memberWith, seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { eventually, startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let ws: Workspace;
let appUuid: string;
let freeResource: string;
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });
const owner = () => auth(ws.ownerToken);

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
  appUuid = await insertApp(stack.ds, ws);
  freeResource = await createResource(stack.ds, ws.uuid, ws.regionId, 'free-res', {
    plan_type: 'free',
    code_name: 'free',
  });
  await stack.startWorker();
});
afterAll(() => stack.close());

async function service(body: Record<string, unknown>) {
  const res = await stack.http
    .post('/api/v1/services')
    .set(owner())
    .send({ label: 'db', resource_id: ws.resourceUuid, ...body });
  expect(res.status).toBe(201);
  return res.body;
}
async function live(uuid: string) {
  return eventually(
    async () => {
      const res = await stack.http.get(`/api/v1/services/${uuid}`).set(owner());
      return /^(healthy|bound)$/.test(res.body.state) ? res.body : null;
    },
    { what: `service ${uuid} live` },
  );
}
const backups = async (uuid: string) => (await stack.http.get(`/api/v1/services/${uuid}/backups`).set(owner())).body;

describe('standalone services', () => {
  it('POST/GET/PUT/DELETE /services: a service on a compute resource, listed newest first', async () => {
    const a = await service({ type: 'postgres', label: 'orders' });
    const b = await service({ type: 'valkey', label: 'cache' });
    expect(a).toMatchObject({
      type: 'postgres',
      label: 'orders',
      app_uuid: null,
      resource_id: ws.resourceUuid,
      state: 'pending',
    });
    await live(a.uuid);
    const list = await stack.http.get('/api/v1/services').set(owner());
    expect(list.status).toBe(200);
    expect(list.body.map((s: { uuid: string }) => s.uuid).slice(0, 2)).toEqual([b.uuid, a.uuid]);
    const put = await stack.http.put(`/api/v1/services/${a.uuid}`).set(owner()).send({ label: 'orders-db' });
    expect(put.body.label).toBe('orders-db');
    const bad = await stack.http
      .post('/api/v1/services')
      .set(owner())
      .send({ type: 'postgres', label: 'x', resource_id: '00000000-0000-4000-8000-000000000009' });
    expect(bad.status).toBe(422);
    const del = await stack.http.delete(`/api/v1/services/${b.uuid}`).set(owner());
    expect(del.status).toBe(202);
    expect((await stack.http.get(`/api/v1/services/${b.uuid}`).set(owner())).status).toBe(404);
  });

  it('CLN-04 PRV-09 placement: a resource assigned to projects takes only services of one of them (none refused); a move is checked too', async () => {
    const assigned = await createResource(stack.ds, ws.uuid, ws.regionId, 'svc-assigned');
    const mine = (
      await stack.http
        .post('/api/v1/projects')
        .set(owner())
        .send({ name: 'svc-mine', resource_ids: [assigned] })
    ).body.uuid;
    const other = (await stack.http.post('/api/v1/projects').set(owner()).send({ name: 'svc-other' })).body.uuid;
    const none = await stack.http
      .post('/api/v1/services')
      .set(owner())
      .send({ type: 'valkey', label: 'stray', resource_id: assigned });
    expect(none.status).toBe(422);
    expect(none.body.errors).toEqual([{ path: 'body.project_id', message: expect.stringContaining(mine) }]);
    expect(
      (
        await stack.http
          .post('/api/v1/services')
          .set(owner())
          .send({ type: 'valkey', label: 'x', resource_id: assigned, project_id: other })
      ).status,
    ).toBe(422);
    const ok = await service({ type: 'valkey', label: 'placed', resource_id: assigned, project_id: mine });
    expect(ok.project_id).toBe(mine);
    expect((await stack.http.put(`/api/v1/services/${ok.uuid}`).set(owner()).send({ project_id: other })).status).toBe(
      422,
    );
    expect((await stack.http.put(`/api/v1/services/${ok.uuid}`).set(owner()).send({ project_id: null })).status).toBe(
      422,
    );
    expect((await stack.http.put(`/api/v1/services/${ok.uuid}`).set(owner()).send({ project_id: mine })).status).toBe(
      200,
    );
  });

  it('a service in a project closed to the caller is hidden (404, left out of the list); lists page with X-Total-Count', async () => {
    const [project] = await stack.ds.query(
      `INSERT INTO projects (uuid, workspace_uuid, name) VALUES (gen_random_uuid(), $1, 'closed') RETURNING uuid`,
      [ws.uuid],
    );
    const hidden = await service({ type: 'valkey', label: 'hidden', project_id: project.uuid });
    await stack.ds.query(
      `INSERT INTO project_restrictions (project_uuid, subject_type, role_name) VALUES ($1, 'role', 'admin')`,
      [project.uuid],
    );
    const member = await memberWith(stack.ds, ws.uuid, 'svc-viewer', ['services:view']);
    expect((await stack.http.get(`/api/v1/services/${hidden.uuid}`).set(auth(member.token))).status).toBe(404);
    const list = await stack.http.get('/api/v1/services?per_page=1').set(auth(member.token));
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(1);
    expect(list.body[0].uuid).not.toBe(hidden.uuid);
    const all = await stack.http.get('/api/v1/services?per_page=200').set(owner());
    expect(Number(all.headers['x-total-count'])).toBe(all.body.length);
    expect(all.body.map((x: { uuid: string }) => x.uuid)).toContain(hidden.uuid);
  });

  it('AUTH-10 services:operate sets public access on a service; services:manage resets a service database', async () => {
    const s = await service({ type: 'postgres' });
    await live(s.uuid);
    const operate = await tokenWith(stack.ds, ws.uuid, ['services:operate']);
    const manage = await tokenWith(stack.ds, ws.uuid, ['services:manage']);
    expect(
      (
        await stack.http
          .post(`/api/v1/services/${s.uuid}/public_access`)
          .set(auth(manage))
          .send({ public_access: true })
      ).status,
    ).toBe(403);
    const on = await stack.http
      .post(`/api/v1/services/${s.uuid}/public_access`)
      .set(auth(operate))
      .send({ public_access: true });
    expect(on.status).toBe(200);
    expect(on.body.connection_details.external.external_connection_url).toMatch(/^postgresql:/);
    expect((await stack.http.post(`/api/v1/services/${s.uuid}/reset_database`).set(auth(operate))).status).toBe(403);
    const cluster = await clusterOf(stack.ds, s.uuid);
    await simData(stack).writeRow(cluster, 'k', 'v');
    const reset = await stack.http.post(`/api/v1/services/${s.uuid}/reset_database`).set(auth(manage));
    expect(reset.status).toBe(202);
    expect(reset.body.message).toMatch(/does not come back/);
    await eventually(async () => Object.keys(await simData(stack).readRows(cluster)).length === 0, {
      what: 'ADD-11 service data dropped',
    });
  });

  it('ADD-08 ADD-09 POST /services/{id}/mount_app mounts a sub_path (created if missing) with the same rule', async () => {
    const vol = await service({ type: 'storage', label: 'files' });
    await live(vol.uuid);
    for (const bad of ['/abs', '../x', 'a/../b', './a', 'a\\b']) {
      const res = await stack.http
        .post(`/api/v1/services/${vol.uuid}/mount_app`)
        .set(owner())
        .send({ app_uuid: appUuid, mount_path: '/mnt/x', sub_path: bad });
      expect(`${bad} ${res.status}`).toBe(`${bad} 422`);
    }
    const ok = await stack.http
      .post(`/api/v1/services/${vol.uuid}/mount_app`)
      .set(owner())
      .send({ app_uuid: appUuid, mount_path: '/mnt/files', sub_path: 'tenant/a' });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({
      service_id: vol.uuid,
      app_uuid: appUuid,
      sub_path: 'tenant/a',
      access_mode: 'shared',
    });
    // the mount reaches the app's processes at their next start: the app is marked for a redeploy
    expect((await stack.http.get(`/api/v1/apps/${appUuid}`).set(owner()).expect(200)).body.needs_redeploy).toBe(true);
    await eventually(
      async () => (await simData(stack).dirs(await clusterOf(stack.ds, vol.uuid))).includes('tenant/a'),
      { what: 'sub_path created' },
    );
    const excl = await stack.http
      .post(`/api/v1/services/${vol.uuid}/mount_app`)
      .set(owner())
      .send({ app_uuid: appUuid, mount_path: '/mnt/y', sub_path: 'b', access_mode: 'exclusive' });
    expect(excl.status).toBe(422);
  });
});

describe('backups', () => {
  it('BKP-01 BKP-02 backup_enabled changes when the update is accepted; backup_active follows once applied', async () => {
    const s = await service({ type: 'postgres' });
    await live(s.uuid);
    expect(await backups(s.uuid)).toMatchObject({ backup_enabled: false, backup_active: false, backups: [] });
    await SimulatedCore.injectFault(stack.ds, 'data.setBackups', 2);
    const put = await stack.http.put(`/api/v1/services/${s.uuid}`).set(owner()).send({ backup_enabled: '1' });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ backup_enabled: true, backup_active: false });
    expect(await backups(s.uuid)).toMatchObject({ backup_enabled: true, backup_active: false });
    const done = await eventually(
      async () => {
        const b = await backups(s.uuid);
        return b.backup_active ? b : null;
      },
      { what: 'backup_active' },
    );
    expect(done.backup_enabled).toBe(true);
    expect(done.backups).toHaveLength(1);
    expect(done.backups[0]).toEqual({
      name: expect.stringMatching(/^backup-/),
      created_at: expect.any(String),
      size: expect.any(Number),
    });
    expect(done.recovery_window.earliest).toBe(done.backups[0].created_at);
    expect((await simData(stack).clusterInfo(await clusterOf(stack.ds, s.uuid)))!.backups).toBe(true);
    // and off again
    await stack.http.put(`/api/v1/services/${s.uuid}`).set(owner()).send({ backup_enabled: false });
    await eventually(async () => (await backups(s.uuid)).backup_active === false, { what: 'backups off' });
  });

  it('BKP-03 backup_enabled is always false on the free plan; asking for true is a 422 with a clear message', async () => {
    const res = await stack.http
      .post('/api/v1/services')
      .set(owner())
      .send({ type: 'postgres', label: 'free', resource_id: freeResource, backup_enabled: true });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/not available on the free plan/);
    const s = await service({ type: 'postgres', label: 'free', resource_id: freeResource });
    await live(s.uuid);
    const put = await stack.http.put(`/api/v1/services/${s.uuid}`).set(owner()).send({ backup_enabled: '1' });
    expect(put.status).toBe(422);
    expect(put.body.errors[0].path).toBe('body.backup_enabled');
    expect(await backups(s.uuid)).toMatchObject({ backup_enabled: false, backup_active: false });
    const app = await insertApp(stack.ds, ws, { resourceUuid: freeResource });
    const addon = await stack.http
      .post(`/api/v1/apps/${app}/addons`)
      .set(owner())
      .send({ type: 'postgres', backup_enabled: true });
    expect(addon.status).toBe(422);
  });

  it("GET /apps/{uuid}/addons/{id}/backups lists an add-on's backups with name, time and size", async () => {
    const created = await stack.http
      .post(`/api/v1/apps/${appUuid}/addons`)
      .set(owner())
      .send({ type: 'postgres', backup_enabled: true });
    await eventually(
      async () => {
        const b = (await stack.http.get(`/api/v1/apps/${appUuid}/addons/${created.body.uuid}/backups`).set(owner()))
          .body;
        return b.backup_active && b.backups.length === 1;
      },
      { what: 'add-on backups' },
    );
  });
});

describe('ADD-12 ERR-06 booleans accept JSON true/false and "1"/"0" only', () => {
  const accepted = [true, false, '1', '0'];
  const refused = ['true', 'yes', 1, null];
  const fields: Array<[string, string, (uuid: string) => string, Record<string, unknown>, string[]]> = [
    [
      'post',
      'POST /apps/{uuid}/addons',
      () => `/api/v1/apps/${appUuid}/addons`,
      { type: 'postgres' },
      ['backup_enabled', 'public_access', 's3_enabled'],
    ],
    [
      'put',
      'PUT /apps/{uuid}/addons/{id}',
      (id) => `/api/v1/apps/${appUuid}/addons/${id}`,
      {},
      ['backup_enabled', 'public_access', 's3_enabled'],
    ],
    [
      'post',
      'POST /services',
      () => '/api/v1/services',
      { type: 'postgres', label: 'b' },
      ['backup_enabled', 'public_access', 's3_enabled'],
    ],
    [
      'put',
      'PUT /services/{id}',
      (id) => `/api/v1/services/${id}`,
      {},
      ['backup_enabled', 'public_access', 's3_enabled'],
    ],
    [
      'post',
      'POST /apps/{uuid}/addons/{id}/restore_backup',
      (id) => `/api/v1/apps/${appUuid}/addons/${id}/restore_backup`,
      {},
      ['to_new_cluster'],
    ],
    [
      'post',
      'POST /services/{id}/restore_backup',
      (id) => `/api/v1/services/${id}/restore_backup`,
      {},
      ['to_new_cluster'],
    ],
    [
      'post',
      'POST /apps/{uuid}/addons/{id}/public_access',
      (id) => `/api/v1/apps/${appUuid}/addons/${id}/public_access`,
      {},
      ['public_access'],
    ],
    [
      'post',
      'POST /services/{id}/public_access',
      (id) => `/api/v1/services/${id}/public_access`,
      {},
      ['public_access'],
    ],
  ];
  it.each(fields)('%s %s', async (method, _label, path, base, names) => {
    const addon = (await stack.http.post(`/api/v1/apps/${appUuid}/addons`).set(owner()).send({ type: 'postgres' }))
      .body;
    const svc = await service({ type: 'postgres' });
    const id = path('x').includes('/services/') ? svc.uuid : addon.uuid;
    const withResource = path('x') === '/api/v1/services' ? { resource_id: ws.resourceUuid } : {};
    for (const name of names) {
      for (const value of refused) {
        const res = await (stack.http as any)
          [method](path(id))
          .set(owner())
          .send({ ...base, ...withResource, [name]: value });
        expect(`${name}=${JSON.stringify(value)} ${res.status}`).toBe(`${name}=${JSON.stringify(value)} 400`);
        expect(res.body.detail).toMatch(
          value === null ? new RegExp(`${name} (cannot be null|is a required field)`) : /true, false, "1" or "0"/,
        );
      }
      for (const value of accepted) {
        const res = await (stack.http as any)
          [method](path(id))
          .set(owner())
          .send({ ...base, ...withResource, [name]: value });
        expect(`${name}=${JSON.stringify(value)} ${res.status}`).not.toMatch(/ (400|5\d\d)$/);
      }
    }
  });
});

describe('restore', () => {
  async function dbWithBackups() {
    const s = await service({ type: 'postgres', backup_enabled: true });
    await eventually(async () => (await backups(s.uuid)).backup_active, { what: 'backups on' });
    await live(s.uuid);
    const cluster = await clusterOf(stack.ds, s.uuid);
    return { s, cluster };
  }
  const acts = () => createActivities(stack.activityDeps);

  it('BKP-04 BKP-08 restore_backup with backup_name restores that backup in place and returns a Message', async () => {
    const { s, cluster } = await dbWithBackups();
    await simData(stack).writeRow(cluster, 'a', '1');
    const first = await acts().takeAddonBackup(s.uuid);
    await simData(stack).writeRow(cluster, 'a', '2');
    await acts().takeAddonBackup(s.uuid);
    await simData(stack).writeRow(cluster, 'b', 'later');
    const res = await stack.http
      .post(`/api/v1/services/${s.uuid}/restore_backup`)
      .set(owner())
      .send({ backup_name: first });
    expect(res.status).toBe(202);
    expect(Object.keys(res.body)).toEqual(['message']);
    expect(res.body.message).toMatch(new RegExp(`Restoring backup ${first} in place`));
    await stack.temporal.workflow.getHandle(`service-restore/${s.uuid}`).result();
    expect(await simData(stack).readRows(cluster)).toEqual({ a: '1' });
    expect((await stack.http.get(`/api/v1/services/${s.uuid}`).set(owner())).body.state).toBe('healthy');
    const unknown = await stack.http
      .post(`/api/v1/services/${s.uuid}/restore_backup`)
      .set(owner())
      .send({ backup_name: 'nope' });
    expect(unknown.status).toBe(422);
  });

  it('BKP-05 target_time is a point-in-time recovery; outside the window or not ISO 8601 is a 422', async () => {
    const { s, cluster } = await dbWithBackups();
    await simData(stack).writeRow(cluster, 'x', 'before');
    await new Promise((r) => setTimeout(r, 30));
    const t = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 30));
    await simData(stack).writeRow(cluster, 'x', 'after');
    await simData(stack).writeRow(cluster, 'y', 'after');
    const res = await stack.http
      .post(`/api/v1/services/${s.uuid}/restore_backup`)
      .set(owner())
      .send({ target_time: t });
    expect(res.status).toBe(202);
    await stack.temporal.workflow.getHandle(`service-restore/${s.uuid}`).result();
    expect(await simData(stack).readRows(cluster)).toEqual({ x: 'before' });
    for (const bad of [
      '2000-01-01T00:00:00Z',
      new Date(Date.now() + 3600_000).toISOString(),
      'yesterday',
      '2026-11-22',
    ]) {
      const r = await stack.http
        .post(`/api/v1/services/${s.uuid}/restore_backup`)
        .set(owner())
        .send({ target_time: bad });
      expect(`${bad} ${r.status}`).toBe(`${bad} 422`);
    }
    const both = await stack.http
      .post(`/api/v1/services/${s.uuid}/restore_backup`)
      .set(owner())
      .send({ target_time: t, backup_name: 'x' });
    expect(both.status).toBe(422);
  });

  it('BKP-06 with neither it restores the latest backup', async () => {
    const { s, cluster } = await dbWithBackups();
    await simData(stack).writeRow(cluster, 'v', 'old');
    await acts().takeAddonBackup(s.uuid);
    await simData(stack).writeRow(cluster, 'v', 'newest');
    await acts().takeAddonBackup(s.uuid);
    await simData(stack).writeRow(cluster, 'v', 'unsaved');
    const res = await stack.http.post(`/api/v1/services/${s.uuid}/restore_backup`).set(owner()).send({});
    expect(res.body.message).toMatch(/the latest backup/);
    await stack.temporal.workflow.getHandle(`service-restore/${s.uuid}`).result();
    expect(await simData(stack).readRows(cluster)).toEqual({ v: 'newest' });
  });

  it('BKP-06 the restore starts through the outbox (an operation row, started after commit) and records one audit entry', async () => {
    const { s } = await dbWithBackups();
    const res = await stack.http.post(`/api/v1/services/${s.uuid}/restore_backup`).set(owner()).send({});
    expect(res.status).toBe(202);
    const ops = await stack.ds.query(`SELECT workflow_type, args, started_at FROM operations WHERE workflow_id = $1`, [
      `service-restore/${s.uuid}`,
    ]);
    expect(ops).toHaveLength(1);
    expect(ops[0]).toMatchObject({
      workflow_type: 'addonRestore',
      args: [{ addonUuid: s.uuid, from: { latest: true } }],
    });
    expect(ops[0].started_at).not.toBeNull();
    const audit = await stack.ds.query(
      `SELECT created_at FROM audit_events WHERE resource_uuid = $1 AND action = 'service.restore'`,
      [s.uuid],
    );
    expect(audit).toHaveLength(1);
    await stack.temporal.workflow.getHandle(`service-restore/${s.uuid}`).result();
  });

  it('BKP-07 to_new_cluster creates a new cluster beside the old one, which is left untouched', async () => {
    const created = await stack.http
      .post(`/api/v1/apps/${appUuid}/addons`)
      .set(owner())
      .send({ type: 'postgres', backup_enabled: true });
    const id = created.body.uuid;
    await eventually(
      async () =>
        (await stack.http.get(`/api/v1/apps/${appUuid}/addons/${id}/backups`).set(owner())).body.backup_active,
      { what: 'backups on' },
    );
    await eventually(
      async () => (await stack.http.get(`/api/v1/apps/${appUuid}/addons/${id}`).set(owner())).body.state === 'healthy',
      { what: 'live' },
    );
    const cluster = await clusterOf(stack.ds, id);
    await simData(stack).writeRow(cluster, 'k', 'saved');
    await acts().takeAddonBackup(id);
    await simData(stack).writeRow(cluster, 'k', 'current');
    const before = await stack.http.get(`/api/v1/apps/${appUuid}/addons/${id}`).set(owner());
    const res = await stack.http
      .post(`/api/v1/apps/${appUuid}/addons/${id}/restore_backup`)
      .set(owner())
      .send({ to_new_cluster: '1' });
    expect(res.status).toBe(202);
    expect(res.body.message).toMatch(/into a new cluster .* not touched/);
    const result = (await stack.temporal.workflow.getHandle(`addon-restore/${id}`).result()) as { targetUuid: string };
    expect(result.targetUuid).not.toBe(id);
    expect(await simData(stack).readRows(cluster)).toEqual({ k: 'current' });
    expect(await simData(stack).readRows(await clusterOf(stack.ds, result.targetUuid))).toEqual({ k: 'saved' });
    const after = await stack.http.get(`/api/v1/apps/${appUuid}/addons/${id}`).set(owner());
    expect(after.body).toEqual(before.body);
    const list = await stack.http.get(`/api/v1/apps/${appUuid}/addons`).set(owner());
    const copy = list.body.find((a: { uuid: string }) => a.uuid === result.targetUuid);
    expect(copy).toMatchObject({ type: 'postgres', state: 'healthy', label: expect.stringContaining('(restored)') });
    expect(copy.connection_details.internal.password).not.toBe(before.body.connection_details.internal.password);
  });

  it('BKP-07 a second concurrent restore of the same database is refused with 409; restores only postgres', async () => {
    const { s } = await dbWithBackups();
    await SimulatedCore.injectFault(stack.ds, 'data.restore', 3);
    const first = await stack.http.post(`/api/v1/services/${s.uuid}/restore_backup`).set(owner()).send({});
    expect(first.status).toBe(202);
    const second = await stack.http
      .post(`/api/v1/services/${s.uuid}/restore_backup`)
      .set(owner())
      .send({ to_new_cluster: true });
    expect(second.status).toBe(409);
    // refused by the running workflow's start, or by the state it has already moved the database to
    expect(second.body.detail).toMatch(/already running|database is restoring/);
    await stack.temporal.workflow.getHandle(`service-restore/${s.uuid}`).result();
    const third = await stack.http.post(`/api/v1/services/${s.uuid}/restore_backup`).set(owner()).send({});
    expect(third.status).toBe(202);
    await stack.temporal.workflow.getHandle(`service-restore/${s.uuid}`).result();
    // a restore into a new cluster leaves the source live: the restore under way refuses the next
    await SimulatedCore.injectFault(stack.ds, 'data.restore', 3);
    expect(
      (await stack.http.post(`/api/v1/services/${s.uuid}/restore_backup`).set(owner()).send({ to_new_cluster: true }))
        .status,
    ).toBe(202);
    const whileCopying = await stack.http.post(`/api/v1/services/${s.uuid}/restore_backup`).set(owner()).send({});
    expect(whileCopying.status).toBe(409);
    expect(whileCopying.body.detail).toMatch(/already running/);
    await stack.temporal.workflow.getHandle(`service-restore/${s.uuid}`).result();
    const cache = await service({ type: 'valkey' });
    expect((await stack.http.post(`/api/v1/services/${cache.uuid}/restore_backup`).set(owner()).send({})).status).toBe(
      422,
    );
  });
});
