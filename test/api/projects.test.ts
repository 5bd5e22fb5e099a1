import { startStack, eventually, type TestStack } from '../support/stack';
import { memberWith, seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';

let stack: TestStack;
let ws: Workspace;
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
});
afterAll(() => stack.close());

describe('projects', () => {
  it("PRJ-01 GET /projects lists the workspace's projects newest first (GEN-05 array)", async () => {
    const names = ['alpha', 'beta', 'gamma'];
    for (const name of names) {
      const res = await stack.http
        .post('/api/v1/projects')
        .set(auth(ws.ownerToken))
        .send({ name, description: `${name} things` });
      expect(res.status).toBe(201);
      expect(res.headers.location).toBe(`/api/v1/projects/${res.body.uuid}`);
    }
    const res = await stack.http.get('/api/v1/projects').set(auth(ws.ownerToken));
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    expect(res.body.map((p: { name: string }) => p.name)).toEqual(['gamma', 'beta', 'alpha']);
  });

  it('PRJ-02 a project with no resources uses the shared pool; assigned resources are listed as platform objects', async () => {
    const created = await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'pooled' });
    expect(created.body.resources).toEqual([]);
    const updated = await stack.http
      .put(`/api/v1/projects/${created.body.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ resource_ids: [ws.resourceUuid] });
    expect(updated.status).toBe(200);
    expect(updated.body.resources).toHaveLength(1);
    expect(updated.body.resources[0]).toMatchObject({
      uuid: ws.resourceUuid,
      assigned: true,
      project_ids: [created.body.uuid],
    });
    const resource = await stack.http.get(`/api/v1/resources/${ws.resourceUuid}`).set(auth(ws.ownerToken));
    expect(resource.body.project_ids).toContain(created.body.uuid);
  });

  it('GEN-02 GEN-03 identifiers are UUIDs and timestamps ISO 8601 UTC', async () => {
    const res = await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'shapes' });
    expect(res.body.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(res.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(new Date(res.body.created_at).toISOString()).toBe(res.body.created_at);
  });

  it('refuses a duplicate name with 409 and an unknown resource with 422', async () => {
    const dup = await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'alpha' });
    expect(dup.status).toBe(409);
    expect(dup.headers['content-type']).toMatch(/application\/problem\+json/);
    const bad = await stack.http
      .post('/api/v1/projects')
      .set(auth(ws.ownerToken))
      .send({ name: 'ghost', resource_ids: ['00000000-0000-4000-8000-000000000000'] });
    expect(bad.status).toBe(422);
    const list = await stack.http.get('/api/v1/projects').set(auth(ws.ownerToken));
    expect(list.body.map((p: { name: string }) => p.name)).not.toContain('ghost');
  });

  it('PRJ-06 DELETE /projects/{uuid} deletes the project through a workflow that releases its resources first', async () => {
    const worker = await stack.startWorker();
    const created = await stack.http
      .post('/api/v1/projects')
      .set(auth(ws.ownerToken))
      .send({ name: 'doomed', resource_ids: [ws.resourceUuid] });
    const res = await stack.http.delete(`/api/v1/projects/${created.body.uuid}`).set(auth(ws.ownerToken));
    expect(res.status).toBe(202);
    expect(res.body.state).toBe('deleting');
    await eventually(
      async () =>
        (await stack.http.get(`/api/v1/projects/${created.body.uuid}`).set(auth(ws.ownerToken))).status === 404,
      { what: 'project deleted' },
    );
    const [{ n }] = await stack.ds.query(`SELECT count(*)::int AS n FROM project_resources WHERE project_uuid = $1`, [
      created.body.uuid,
    ]);
    expect(n).toBe(0);
    const handle = stack.temporal.workflow.getHandle(`project-delete/${created.body.uuid}`);
    await handle.result();
    expect((await handle.describe()).status.name).toBe('COMPLETED');
    expect(await handle.query<string>('state')).toBe('deleted');
    await worker.shutdown();
  });

  it('PRJ-06 needs projects:manage (AUTH-12)', async () => {
    const created = await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'guarded' });
    const viewer = await tokenWith(stack.ds, ws.uuid, ['projects:operate', 'apps:manage']);
    const res = await stack.http.delete(`/api/v1/projects/${created.body.uuid}`).set(auth(viewer));
    expect(res.status).toBe(403);
    expect(res.body.detail).toContain('projects:manage');
  });
});

describe('project restrictions', () => {
  let project: string;
  let listed: { token: string; userUuid: string };
  let notListed: { token: string };
  let customRole: { token: string };
  let listedRole: { token: string };
  let admin: { token: string };

  beforeAll(async () => {
    const res = await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'secret-project' });
    project = res.body.uuid;
    listed = await memberWith(stack.ds, ws.uuid, 'developer', ['apps:view']);
    notListed = await memberWith(stack.ds, ws.uuid, 'developer', ['apps:view']);
    customRole = await memberWith(stack.ds, ws.uuid, 'power-user', ['apps:manage', 'projects:manage']);
    listedRole = await memberWith(stack.ds, ws.uuid, 'auditor', ['apps:view']);
    admin = await memberWith(stack.ds, ws.uuid, 'admin');
    const r1 = await stack.http
      .post(`/api/v1/projects/${project}/restrictions`)
      .set(auth(ws.ownerToken))
      .send({ subject_type: 'user', user_uuid: listed.userUuid });
    expect(r1.status).toBe(201);
    expect(r1.body).toEqual({
      id: expect.any(Number),
      subject_type: 'user',
      user_uuid: listed.userUuid,
      role_name: null,
    });
    const r2 = await stack.http
      .post(`/api/v1/projects/${project}/restrictions`)
      .set(auth(ws.ownerToken))
      .send({ subject_type: 'role', role_name: 'auditor' });
    expect(r2.status).toBe(201);
  });

  it('PRJ-07 each restriction carries id (integer), subject_type, user_uuid, role_name', async () => {
    const res = await stack.http.get(`/api/v1/projects/${project}`).set(auth(ws.ownerToken));
    expect(res.body.restrictions).toHaveLength(2);
    for (const r of res.body.restrictions) {
      expect(Number.isInteger(r.id)).toBe(true);
      expect(Object.keys(r).sort()).toEqual(['id', 'role_name', 'subject_type', 'user_uuid']);
    }
  });

  it('PRJ-04 a listed member reaches the restricted project', async () => {
    expect((await stack.http.get(`/api/v1/projects/${project}`).set(auth(listed.token))).status).toBe(200);
  });

  it('PRJ-04 a member of a listed role reaches it', async () => {
    expect((await stack.http.get(`/api/v1/projects/${project}`).set(auth(listedRole.token))).status).toBe(200);
  });

  it('PRJ-04 a member not listed gets 404 and does not see it in the list', async () => {
    const res = await stack.http.get(`/api/v1/projects/${project}`).set(auth(notListed.token));
    expect(res.status).toBe(404);
    const list = await stack.http.get('/api/v1/projects').set(auth(notListed.token));
    expect(list.body.map((p: { uuid: string }) => p.uuid)).not.toContain(project);
  });

  it('PRJ-05 a custom role never bypasses a restriction, whatever it carries', async () => {
    expect((await stack.http.get(`/api/v1/projects/${project}`).set(auth(customRole.token))).status).toBe(404);
    expect(
      (await stack.http.put(`/api/v1/projects/${project}`).set(auth(customRole.token)).send({ description: 'x' }))
        .status,
    ).toBe(404);
    expect((await stack.http.delete(`/api/v1/projects/${project}`).set(auth(customRole.token))).status).toBe(404);
  });

  it('PRJ-04 the owner and built-in admins reach it', async () => {
    expect((await stack.http.get(`/api/v1/projects/${project}`).set(auth(ws.ownerToken))).status).toBe(200);
    expect((await stack.http.get(`/api/v1/projects/${project}`).set(auth(admin.token))).status).toBe(200);
  });

  it('PRJ-03 with its restrictions removed the project is open to the workspace again', async () => {
    const other = await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'reopened' });
    const r = await stack.http
      .post(`/api/v1/projects/${other.body.uuid}/restrictions`)
      .set(auth(ws.ownerToken))
      .send({ subject_type: 'user', user_uuid: listed.userUuid });
    expect((await stack.http.get(`/api/v1/projects/${other.body.uuid}`).set(auth(notListed.token))).status).toBe(404);
    const del = await stack.http
      .delete(`/api/v1/projects/${other.body.uuid}/restrictions/${r.body.id}`)
      .set(auth(ws.ownerToken));
    expect(del.status).toBe(204);
    expect((await stack.http.get(`/api/v1/projects/${other.body.uuid}`).set(auth(notListed.token))).status).toBe(200);
  });

  it('refuses a restriction naming a non-member or an unknown role (422)', async () => {
    const a = await stack.http
      .post(`/api/v1/projects/${project}/restrictions`)
      .set(auth(ws.ownerToken))
      .send({ subject_type: 'user', user_uuid: '00000000-0000-4000-8000-000000000001' });
    expect(a.status).toBe(422);
    const b = await stack.http
      .post(`/api/v1/projects/${project}/restrictions`)
      .set(auth(ws.ownerToken))
      .send({ subject_type: 'role', role_name: 'nobody' });
    expect(b.status).toBe(422);
  });
});
