import { randomUUID } from 'node:crypto';
import { createStateActivities, moveState } from '../../activities/state';
import { createEventActivities } from '../../activities/events';
import { auditCheck } from '../../api/audit';
import { route } from '../../api/route';
import { diffRecords, REDACTED } from '../../domain/audit';
import { insertAuditEvent } from '../../entities/audit-events';
import { memberWith, seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let ws: Workspace;
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
});
afterAll(() => stack.close());

async function auditOf(resourceUuid: string) {
  const res = await stack.http.get(`/api/v1/audit_events?resource_uuid=${resourceUuid}`).set(auth(ws.ownerToken));
  expect(res.status).toBe(200);
  return res.body as Array<Record<string, any>>;
}

describe('audit log', () => {
  it('an accepted update records one entry with actor, action, diff, request id, client and user agent', async () => {
    const created = await stack.http
      .post('/api/v1/projects')
      .set(auth(ws.ownerToken))
      .send({ name: 'audited', description: 'one' });
    const admin = await memberWith(stack.ds, ws.uuid, 'admin');
    await stack.http
      .put(`/api/v1/projects/${created.body.uuid}`)
      .set(auth(admin.token))
      .set('X-Request-Id', 'audit-req-1')
      .set('User-Agent', 'audit-test/1.0')
      .send({ description: 'two' })
      .expect(200);
    const entries = await auditOf(created.body.uuid);
    expect(entries.map((e) => e.action)).toEqual(['project.update', 'project.create']);
    const update = entries[0]!;
    expect(update).toMatchObject({
      actor: { type: 'member', uuid: admin.memberUuid },
      source: 'api',
      resource_type: 'project',
      resource_uuid: created.body.uuid,
      diff: { description: { from: 'one', to: 'two' } },
      request_id: 'audit-req-1',
      user_agent: 'audit-test/1.0',
    });
    expect(update.client_ip).toMatch(/127\.0\.0\.1/);
  });

  it('a workspace token is recorded by its uuid, never the token itself', async () => {
    const token = await tokenWith(stack.ds, ws.uuid, ['projects:manage']);
    const created = await stack.http.post('/api/v1/projects').set(auth(token)).send({ name: 'by-token' });
    const [entry] = await auditOf(created.body.uuid);
    const [{ uuid }] = await stack.ds.query(
      `SELECT uuid FROM api_tokens WHERE token_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex')`,
      [token],
    );
    expect(entry!.actor).toEqual({ type: 'workspace_token', uuid });
    expectNoSecretLeaks(stack, [token]);
  });

  it('a rolled-back transaction records nothing', async () => {
    const before = await stack.ds.query(`SELECT count(*)::int AS n FROM audit_events`);
    const res = await stack.http
      .post('/api/v1/projects')
      .set(auth(ws.ownerToken))
      .send({ name: 'rolled-back', resource_ids: [randomUUID()] });
    expect(res.status).toBe(422);
    const after = await stack.ds.query(`SELECT count(*)::int AS n FROM audit_events`);
    expect(after[0].n).toBe(before[0].n);
    expect(await stack.ds.query(`SELECT 1 FROM projects WHERE name = 'rolled-back'`)).toHaveLength(0);
  });

  it('the audit check holds each mutating route to exactly its declared entry', async () => {
    const entry = (requestId: string) =>
      insertAuditEvent(stack.ds, {
        workspaceUuid: ws.uuid,
        actorType: 'system',
        actorUuid: null,
        source: 'api',
        action: 'thing.create',
        resourceType: 'thing',
        resourceUuid: null,
        diff: {},
        requestId,
      });
    const declared = route({
      method: 'post',
      path: '/things',
      requires: 'projects.write',
      tag: 'things',
      summary: 'a test route',
      audit: 'thing.create',
      handler: async () => undefined,
    });
    const silent = { ...declared, audit: false as const };
    const outcome = async (r: typeof declared, requestId: string, writes: number) => {
      const check = (await auditCheck(stack.apiDeps, r, requestId))!;
      for (let i = 0; i < writes; i++) await entry(requestId);
      return check().then(
        () => 'ok',
        (err: Error) => err.message,
      );
    };
    expect(await outcome(declared, randomUUID(), 1)).toBe('ok');
    expect(await outcome(declared, randomUUID(), 0)).toMatch(
      /recorded audit entries \[\], its route declares \["thing.create"\]/,
    );
    expect(await outcome(declared, randomUUID(), 2)).toMatch(
      /recorded audit entries \["thing.create","thing.create"\]/,
    );
    expect(await outcome(silent, randomUUID(), 0)).toBe('ok');
    expect(await outcome(silent, randomUUID(), 1)).toMatch(/its route declares \[\]/);
    // A client may send the same request id twice: only the entries of this request count.
    const reused = randomUUID();
    await entry(reused);
    expect(await outcome(declared, reused, 1)).toBe('ok');
    expect(await auditCheck(stack.apiDeps, { ...declared, method: 'get' }, reused)).toBeNull();
  });

  it('secret fields show as changed, with their values redacted', () => {
    const diff = diffRecords(
      { url: 'https://a', secret_sealed: 'v1.k.aaa', password: 'p1' },
      { url: 'https://b', secret_sealed: 'v1.k.bbb', password: 'p2' },
    );
    expect(diff).toEqual({
      url: { from: 'https://a', to: 'https://b' },
      secret_sealed: { from: REDACTED, to: REDACTED },
      password: { from: REDACTED, to: REDACTED },
    });
    expect(JSON.stringify(diffRecords(null, { token_hash: 'abc', api_token: 'brt_x' }))).not.toMatch(/abc|brt_x/);
    // Inside JSON values too, at any depth.
    expect(
      diffRecords(
        { settings: { s3_enabled: false } },
        { settings: { s3_enabled: true, nested: [{ password: 'p3', name: 'n' }] } },
      ),
    ).toEqual({
      settings: { from: { s3_enabled: false }, to: { s3_enabled: true, nested: [{ password: REDACTED, name: 'n' }] } },
    });
  });

  it('workflow-driven state moves are recorded with source workflow', async () => {
    const created = await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'moved' });
    const { transition } = createStateActivities(stack.activityDeps);
    expect(await transition({ table: 'projects', uuid: created.body.uuid, from: ['active'], to: 'deleting' })).toBe(
      true,
    );
    expect(await transition({ table: 'projects', uuid: created.body.uuid, from: ['active'], to: 'deleting' })).toBe(
      false,
    );
    const [entry] = await auditOf(created.body.uuid);
    expect(entry).toMatchObject({
      source: 'workflow',
      action: 'project.state',
      actor: { type: 'system', uuid: null },
      diff: { state: { from: 'active', to: 'deleting' } },
    });
    // Rows of the addons table are recorded as what they are: here a standalone service.
    const [service] = await stack.ds.query(
      `INSERT INTO addons (uuid, workspace_uuid, kind, resource_uuid, type, name, label, state) VALUES (gen_random_uuid(), $1, 'service', $2, 'postgres', 'pg-moved', 'moved', 'pending') RETURNING uuid`,
      [ws.uuid, ws.resourceUuid],
    );
    expect(await transition({ table: 'addons', uuid: service.uuid, from: ['pending'], to: 'processing' })).toBe(true);
    expect(await auditOf(service.uuid)).toMatchObject([
      {
        source: 'workflow',
        action: 'service.state',
        resource_type: 'service',
        diff: { state: { from: 'pending', to: 'processing' } },
      },
    ]);
  });

  it("a state move in a caller's transaction that rolls back leaves neither the move nor its entry", async () => {
    const created = await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'rolled-back' });
    await expect(
      stack.ds.transaction(async (m) => {
        expect(
          await moveState(m, { table: 'projects', uuid: created.body.uuid, from: ['active'], to: 'deleting' }),
        ).toBe(true);
        throw new Error('the caller gives up');
      }),
    ).rejects.toThrow('the caller gives up');
    const [row] = await stack.ds.query(`SELECT state FROM projects WHERE uuid = $1`, [created.body.uuid]);
    expect(row.state).toBe('active');
    expect((await auditOf(created.body.uuid)).filter((e) => e.source === 'workflow')).toEqual([]);
  });

  it('is for workspace admins: owner and admin read it, any custom role or token gets 403; filters apply', async () => {
    const custom = await memberWith(stack.ds, ws.uuid, 'everything', [
      'apps:manage',
      'projects:manage',
      'workspace:general',
    ]);
    expect((await stack.http.get('/api/v1/audit_events').set(auth(custom.token))).status).toBe(403);
    const admin = await memberWith(stack.ds, ws.uuid, 'admin');
    const res = await stack.http.get('/api/v1/audit_events?action=project.create&per_page=2').set(auth(admin.token));
    expect(res.status).toBe(200);
    expect(res.body.length).toBeLessThanOrEqual(2);
    expect(res.body.every((e: { action: string }) => e.action === 'project.create')).toBe(true);
    expect(Number(res.headers['x-total-count'])).toBeGreaterThanOrEqual(3);
    const future = await stack.http
      .get(`/api/v1/audit_events?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)
      .set(auth(admin.token));
    expect(future.body).toEqual([]);
    expect((await stack.http.get('/api/v1/audit_events?since=yesterday').set(auth(admin.token))).status).toBe(400);
  });
});

describe('app activity', () => {
  it("AUTH-04 merges the app's changes and platform events newest first, and respects project restrictions", async () => {
    const project = (await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'feed' })).body;
    const appUuid = randomUUID();
    await stack.ds.query(
      `INSERT INTO apps (uuid, workspace_uuid, project_uuid, resource_uuid, name, service_name, label) VALUES ($1, $2, $3, $4, 'feed-x1', 'feed', 'Feed')`,
      [appUuid, ws.uuid, project.uuid, ws.resourceUuid],
    );
    const { emitEvent } = createEventActivities(stack.activityDeps);
    await emitEvent({
      eventId: randomUUID(),
      workspaceUuid: ws.uuid,
      type: 'deploy_started',
      appUuid,
      data: { message: null },
    });
    await stack.ds.query(
      `INSERT INTO audit_events (workspace_uuid, actor_type, source, action, resource_type, resource_uuid) VALUES ($1, 'system', 'workflow', 'app.state', 'app', $2)`,
      [ws.uuid, appUuid],
    );
    await emitEvent({
      eventId: randomUUID(),
      workspaceUuid: ws.uuid,
      type: 'deploy_ended',
      appUuid,
      data: { message: null },
    });
    const viewer = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    const res = await stack.http.get(`/api/v1/apps/${appUuid}/activity`).set(auth(viewer));
    expect(res.status).toBe(200);
    expect(res.body.map((e: { kind: string; type: string }) => `${e.kind}:${e.type}`)).toEqual([
      'event:deploy_ended',
      'change:app.state',
      'event:deploy_started',
    ]);
    expect(res.body[0].data).toMatchObject({ app_id: appUuid });

    const outsider = await memberWith(stack.ds, ws.uuid, 'viewer', ['apps:view']);
    const insider = await memberWith(stack.ds, ws.uuid, 'viewer', ['apps:view']);
    await stack.http
      .post(`/api/v1/projects/${project.uuid}/restrictions`)
      .set(auth(ws.ownerToken))
      .send({ subject_type: 'user', user_uuid: insider.userUuid })
      .expect(201);
    expect((await stack.http.get(`/api/v1/apps/${appUuid}/activity`).set(auth(outsider.token))).status).toBe(404);
    expect((await stack.http.get(`/api/v1/apps/${appUuid}/activity`).set(auth(insider.token))).status).toBe(200);
  });
});
