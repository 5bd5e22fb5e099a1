import { randomUUID } from 'node:crypto';
import { seedWorkspace, memberWith, tokenWith, type Workspace } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let ws: Workspace;
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
});
afterAll(() => stack.close());

function expectProblem(res: { status: number; headers: Record<string, string>; body: any }, status: number): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toEqual(
    expect.objectContaining({
      type: expect.stringMatching(/^https:\/\//),
      title: expect.any(String),
      status,
      detail: expect.any(String),
      instance: res.headers['x-request-id'],
    }),
  );
  expect(JSON.stringify(res.body)).not.toMatch(/at .*\.ts:\d+/);
}

describe('problem bodies (RFC 9457)', () => {
  it('ERR-01 400 for a wrongly typed field, with one entry per failing field', async () => {
    const res = await stack.http
      .post('/api/v1/projects')
      .set(auth(ws.ownerToken))
      .send({ name: 42, description: false });
    expectProblem(res, 400);
    expect(res.body.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: 'body.name' }),
        expect.objectContaining({ path: 'body.description' }),
      ]),
    );
  });

  it('400 for a body that is not JSON, and for unknown fields', async () => {
    expectProblem(
      await stack.http
        .post('/api/v1/projects')
        .set(auth(ws.ownerToken))
        .set('Content-Type', 'application/json')
        .send('{"name":'),
      400,
    );
    const res = await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'x', colour: 'blue' });
    expectProblem(res, 400);
    expect(res.body.detail).toContain('colour');
  });

  it('AUTH-01 401 without a token, with a malformed header, and with an expired token', async () => {
    expectProblem(await stack.http.get('/api/v1/projects'), 401);
    expectProblem(await stack.http.get('/api/v1/projects').set('Authorization', 'Token abc'), 401);
    const expired = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    await stack.ds.query(
      `UPDATE api_tokens SET expires_at = now() - interval '1 minute' WHERE token_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex')`,
      [expired],
    );
    const res = await stack.http.get('/api/v1/projects').set(auth(expired));
    expectProblem(res, 401);
    expect(res.body.detail).toMatch(/expired/);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
  });

  it('AUTH-02 403 names the permission the operation needs', async () => {
    const token = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    const res = await stack.http.post('/api/v1/projects').set(auth(token)).send({ name: 'nope' });
    expectProblem(res, 403);
    expect(res.body.detail).toContain('projects:manage');
  });

  it('404 for an unknown route, an unknown id and a malformed id', async () => {
    expectProblem(await stack.http.get('/api/v1/nothing-here').set(auth(ws.ownerToken)), 404);
    expectProblem(await stack.http.get(`/api/v1/projects/${randomUUID()}`).set(auth(ws.ownerToken)), 404);
    expectProblem(await stack.http.get('/api/v1/projects/not-a-uuid').set(auth(ws.ownerToken)), 404);
    expectProblem(await stack.http.get('/nowhere'), 404);
  });

  it('405 for a method the path does not take, with Allow', async () => {
    const res = await stack.http.patch('/api/v1/projects').set(auth(ws.ownerToken)).send({});
    expectProblem(res, 405);
    expect(res.headers.allow).toMatch(/GET/);
    expect(res.headers.allow).toMatch(/POST/);
  });

  it('matches paths as @koa/router does: any case, one trailing slash, OPTIONS and methods of other routers', async () => {
    await stack.http.get('/api/v1/Projects/').set(auth(ws.ownerToken)).expect(200);
    expectProblem(await stack.http.get('/api/v1/projects//').set(auth(ws.ownerToken)), 404);
    expectProblem(await stack.http.get('/api/v1/projects/a/b/c/d/e').set(auth(ws.ownerToken)), 404);
    const options = await stack.http.options('/api/v1/projects').set(auth(ws.ownerToken)).expect(200);
    expect(options.headers.allow?.split(', ').sort()).toEqual(['GET', 'HEAD', 'POST']);
    const document = await stack.http.post('/api/v1/openapi.json').set(auth(ws.ownerToken)).send({});
    expectProblem(document, 405);
    expect(document.headers.allow).toMatch(/GET/);
    const unknown = await stack.http.propfind('/api/v1/projects').set(auth(ws.ownerToken));
    expectProblem(unknown, 405);
  });

  it('409 for a conflict and 422 for a rule', async () => {
    await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'twice' }).expect(201);
    expectProblem(await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'twice' }), 409);
    expectProblem(
      await stack.http
        .post('/api/v1/projects')
        .set(auth(ws.ownerToken))
        .send({ name: 'r', resource_ids: [randomUUID()] }),
      422,
    );
  });

  it('413 beyond the body size limit and 415 for a body that is not JSON', async () => {
    const big = { name: 'big', description: 'x'.repeat(1_100_000) };
    expectProblem(await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send(big), 413);
    expectProblem(
      await stack.http
        .post('/api/v1/projects')
        .set(auth(ws.ownerToken))
        .set('Content-Type', 'text/plain')
        .send('name=x'),
      415,
    );
  });
});

describe('request ids, workspaces, pagination, idempotency', () => {
  it('echoes a sane X-Request-Id and uses it as the problem instance; generates one otherwise', async () => {
    const res = await stack.http.get('/api/v1/projects/nope').set(auth(ws.ownerToken)).set('X-Request-Id', 'trace-123');
    expect(res.headers['x-request-id']).toBe('trace-123');
    expect(res.body.instance).toBe('trace-123');
    const gen = await stack.http
      .get('/api/v1/projects')
      .set(auth(ws.ownerToken))
      .set('X-Request-Id', 'bad id with spaces');
    expect(gen.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(stack.logLines.some((l) => l.includes('"requestId":"trace-123"'))).toBe(true);
  });

  it("GEN-04 the X-Workspace-Id header selects the workspace; without it the token's own is used", async () => {
    const other = await seedWorkspace(stack.ds);
    await stack.http.post('/api/v1/projects').set(auth(other.ownerToken)).send({ name: 'in-other' }).expect(201);
    // Make the first workspace's owner a member of the other workspace as well.
    const [{ role }] = await stack.ds.query(
      `SELECT uuid AS role FROM roles WHERE workspace_uuid = $1 AND name = 'admin'`,
      [other.uuid],
    );
    await stack.ds.query(`INSERT INTO members (uuid, workspace_uuid, user_uuid, role_uuid) VALUES ($1, $2, $3, $4)`, [
      randomUUID(),
      other.uuid,
      ws.ownerUserUuid,
      role,
    ]);
    const own = await stack.http.get('/api/v1/projects').set(auth(ws.ownerToken));
    expect(own.body.map((p: { name: string }) => p.name)).not.toContain('in-other');
    const selected = await stack.http
      .get('/api/v1/projects')
      .set(auth(ws.ownerToken))
      .set('X-Workspace-Id', other.uuid);
    expect(selected.status).toBe(200);
    expect(selected.body.map((p: { name: string }) => p.name)).toContain('in-other');
    // A workspace token cannot leave its workspace; a member cannot reach a workspace it is not in.
    const wsToken = await tokenWith(stack.ds, ws.uuid, ['projects:manage']);
    expectProblem(await stack.http.get('/api/v1/projects').set(auth(wsToken)).set('X-Workspace-Id', other.uuid), 403);
    const stranger = await memberWith(stack.ds, ws.uuid, 'developer', ['apps:view']);
    expectProblem(
      await stack.http.get('/api/v1/projects').set(auth(stranger.token)).set('X-Workspace-Id', other.uuid),
      403,
    );
    expectProblem(await stack.http.get('/api/v1/projects').set(auth(ws.ownerToken)).set('X-Workspace-Id', 'nope'), 400);
  });

  it('paginates lists with page/per_page, Link and X-Total-Count', async () => {
    const p = await seedWorkspace(stack.ds);
    for (let i = 0; i < 7; i++)
      await stack.http
        .post('/api/v1/projects')
        .set(auth(p.ownerToken))
        .send({ name: `p${i}` })
        .expect(201);
    const page2 = await stack.http.get('/api/v1/projects?page=2&per_page=3').set(auth(p.ownerToken));
    expect(page2.status).toBe(200);
    expect(page2.headers['x-total-count']).toBe('7');
    expect(page2.body.map((x: { name: string }) => x.name)).toEqual(['p3', 'p2', 'p1']);
    const links = Object.fromEntries(
      page2.headers.link.split(', ').map((l: string) => {
        const [, url, rel] = /^<([^>]+)>; rel="(\w+)"$/.exec(l)!;
        return [rel, url];
      }),
    );
    expect(links).toEqual({
      first: '/api/v1/projects?page=1&per_page=3',
      prev: '/api/v1/projects?page=1&per_page=3',
      next: '/api/v1/projects?page=3&per_page=3',
      last: '/api/v1/projects?page=3&per_page=3',
    });
    const last = await stack.http.get(links.last).set(auth(p.ownerToken));
    expect(last.body.map((x: { name: string }) => x.name)).toEqual(['p0']);
    expect(last.headers.link).not.toContain('rel="next"');
    expectProblem(await stack.http.get('/api/v1/projects?per_page=500').set(auth(p.ownerToken)), 400);
    expectProblem(await stack.http.get('/api/v1/projects?page=0').set(auth(p.ownerToken)), 400);
  });

  it('replays the first response to a POST with the same Idempotency-Key; refuses the key on a different request', async () => {
    const first = await stack.http
      .post('/api/v1/projects')
      .set(auth(ws.ownerToken))
      .set('Idempotency-Key', 'key-1')
      .send({ name: 'idem' });
    expect(first.status).toBe(201);
    const again = await stack.http
      .post('/api/v1/projects')
      .set(auth(ws.ownerToken))
      .set('Idempotency-Key', 'key-1')
      .send({ name: 'idem' });
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expectProblem(
      await stack.http
        .post('/api/v1/projects')
        .set(auth(ws.ownerToken))
        .set('Idempotency-Key', 'key-1')
        .send({ name: 'other' }),
      422,
    );
    const [{ n }] = await stack.ds.query(`SELECT count(*)::int AS n FROM projects WHERE name = 'idem'`);
    expect(n).toBe(1);
  });

  it('records last_used_at on the token', async () => {
    const token = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    await stack.http.get('/api/v1/regions').set(auth(token)).expect(200);
    const [row] = await stack.ds.query(
      `SELECT last_used_at FROM api_tokens WHERE token_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex')`,
      [token],
    );
    expect(row.last_used_at).not.toBeNull();
  });
});

describe('regions and compute resources', () => {
  it('RES-01 a compute resource carries identity, capacity (total, used, available), assignment, plan and components', async () => {
    await stack.ds.query(
      `INSERT INTO resource_allocations (owner_uuid, owner_type, resource_uuid, cpu_size, ram_size, disk_size) VALUES ($1, 'app', $2, 0.5, 1073741824, 2147483648)`,
      [randomUUID(), ws.resourceUuid],
    );
    const res = await stack.http.get(`/api/v1/resources/${ws.resourceUuid}`).set(auth(ws.ownerToken));
    expect(res.status).toBe(200);
    const r = res.body;
    expect(r).toMatchObject({
      uuid: ws.resourceUuid,
      state: 'active',
      labels: ['test'],
      assigned: false,
      project_ids: [],
    });
    expect(r.total_used_cpu_size).toBe(0.5);
    expect(r.available_cpu_size).toBe(r.total_cpu_size - 0.5);
    expect(r.available_ram_size).toBe(r.total_ram_size - 1073741824);
    expect(r.available_disk_size).toBe(r.total_disk_size - 2147483648);
    expect(Object.keys(r.plan).sort()).toEqual([
      'code_name',
      'cpu_size',
      'description',
      'disk_size',
      'name',
      'plan_type',
      'ram_size',
      'unit_price',
    ]);
    expect(Array.isArray(r.components)).toBe(true);
    const list = await stack.http.get('/api/v1/resources').set(auth(ws.ownerToken));
    expect(list.body.map((x: { uuid: string }) => x.uuid)).toEqual([ws.resourceUuid]);
    const regions = await stack.http.get('/api/v1/regions').set(auth(ws.ownerToken));
    expect(regions.body).toEqual(
      expect.arrayContaining([{ id: ws.regionId, name: expect.any(String), code: expect.any(String) }]),
    );
  });
});
