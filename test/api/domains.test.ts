import { randomBytes } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { insertApp, type AppRow } from '../support/app-rows';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { memberWith, seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { eventually, startStack, type TestStack } from '../support/stack';

let dns: TestDnsServer;
let stack: TestStack;
let ws: Workspace;
let app: AppRow;
let regionDomain: string;

const auth = (token: string) => ({ Authorization: `Bearer ${token}` });
const fresh = (label = 'shop') => `${label}-${randomBytes(4).toString('hex')}.example.com`;

beforeAll(async () => {
  dns = await startDnsServer();
  stack = await startStack({ env: { BERTH_DNS_SERVERS: dns.address } });
  await stack.startWorker();
  ws = await seedWorkspace(stack.ds);
  app = await insertApp(stack.ds, ws);
  [{ domain: regionDomain }] = await stack.ds.query(
    `SELECT r.domain FROM compute_resources c JOIN regions r ON r.id = c.region_id WHERE c.uuid = $1`,
    [ws.resourceUuid],
  );
});
afterAll(async () => {
  await stack?.close();
  await dns?.close();
});

async function addDomain(name: string, appUuid = app.uuid, token = ws.ownerToken) {
  return stack.http.post(`/api/v1/apps/${appUuid}/domains`).set(auth(token)).send({ domain: { name } });
}

async function verifyThroughDns(name: string) {
  const created = await addDomain(name);
  expect(created.status).toBe(201);
  dns.setTxt(`_platformapp-verify.${name}`, { values: [created.body.verification_token] });
  const started = await stack.http
    .post(`/api/v1/apps/${app.uuid}/domains/${created.body.uuid}/verify`)
    .set(auth(ws.ownerToken));
  expect(started.status).toBe(200);
  const done = await eventually(
    async () => {
      const res = await stack.http
        .get(`/api/v1/apps/${app.uuid}/domains/${created.body.uuid}`)
        .set(auth(ws.ownerToken));
      return res.body.verification_status === 'verified' ? res.body : null;
    },
    { what: `${name} verified` },
  );
  return { created: created.body, started: started.body, done };
}

async function operationsFor(uuid: string): Promise<number> {
  const [{ count }] = await stack.ds.query(`SELECT count(*)::int AS count FROM operations WHERE resource_uuid = $1`, [
    uuid,
  ]);
  return count;
}

describe('custom domains', () => {
  it('DOM-01 DOM-03 DOM-04 a new domain is pending with a verification token and an empty dns_target', async () => {
    const name = fresh();
    const res = await addDomain(name);
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`/api/v1/apps/${app.uuid}/domains/${res.body.uuid}`);
    expect(res.body).toEqual({
      uuid: expect.any(String),
      name,
      dns_target: '',
      verification_status: 'pending',
      verification_token: expect.stringMatching(/^berth-verify=[A-Za-z0-9_-]{32}$/),
      certificate: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const shown = await stack.http.get(`/api/v1/apps/${app.uuid}/domains/${res.body.uuid}`).set(auth(ws.ownerToken));
    expect(shown.body).toEqual(res.body);
    const other = await addDomain(fresh());
    expect(other.body.verification_token).not.toBe(res.body.verification_token);
  });

  it('DOM-02 DOM-05 DOM-10 verify (no body) answers the domain in_progress; the TXT record at _platformapp-verify.<domain> verifies it asynchronously', async () => {
    const name = fresh();
    const { created, started, done } = await verifyThroughDns(name);
    expect(started).toMatchObject({
      uuid: created.uuid,
      name,
      verification_status: 'in_progress',
      dns_target: '',
      verification_token: created.verification_token,
    });
    expect(Object.keys(started).sort()).toEqual([
      'certificate',
      'created_at',
      'dns_target',
      'name',
      'updated_at',
      'uuid',
      'verification_status',
      'verification_token',
    ]);
    expect(dns.lookups(`_platformapp-verify.${name}`)).toBeGreaterThanOrEqual(1);
    expect(done).toMatchObject({
      verification_status: 'verified',
      verification_token: '',
      dns_target: `${app.name}.${regionDomain}`,
    });
    const handle = stack.temporal.workflow.getHandle(`domain-verify/${created.uuid}`);
    expect(await handle.result()).toBe('verified');
  });

  it('DOM-03 DOM-04 the token stays and dns_target stays empty while the record is missing', async () => {
    const name = fresh();
    const created = await addDomain(name);
    const started = await stack.http
      .post(`/api/v1/apps/${app.uuid}/domains/${created.body.uuid}/verify`)
      .set(auth(ws.ownerToken));
    expect(started.body.verification_status).toBe('in_progress');
    await eventually(async () => dns.lookups(`_platformapp-verify.${name}`) >= 1, { what: 'first lookup' });
    const handle = stack.temporal.workflow.getHandle(`domain-verify/${created.body.uuid}`);
    await eventually(async () => (await handle.query('state')) === 'waiting', { what: 'waiting for the next check' });
    const shown = await stack.http
      .get(`/api/v1/apps/${app.uuid}/domains/${created.body.uuid}`)
      .set(auth(ws.ownerToken));
    expect(shown.body).toMatchObject({
      verification_status: 'in_progress',
      dns_target: '',
      verification_token: created.body.verification_token,
    });
    // Deleting the domain ends the verification at its next check.
    await stack.http
      .delete(`/api/v1/apps/${app.uuid}/domains/${created.body.uuid}`)
      .set(auth(ws.ownerToken))
      .expect(204);
    await handle.terminate('test done');
  });

  it('DOM-07 verify on a verified domain is a no-op returning it: no new workflow run is scheduled', async () => {
    const { created, done } = await verifyThroughDns(fresh());
    const handle = stack.temporal.workflow.getHandle(`domain-verify/${created.uuid}`);
    await handle.result();
    const before = await handle.describe();
    const ops = await operationsFor(created.uuid);
    const again = await stack.http
      .post(`/api/v1/apps/${app.uuid}/domains/${created.uuid}/verify`)
      .set(auth(ws.ownerToken));
    expect(again.status).toBe(200);
    expect(again.body).toEqual(done);
    expect(await operationsFor(created.uuid)).toBe(ops);
    const after = await stack.temporal.workflow.getHandle(`domain-verify/${created.uuid}`).describe();
    expect(after.runId).toBe(before.runId);
    expect(after.status.name).toBe('COMPLETED');
  });

  it('DOM-08 a www subdomain of a verified root needs no verification: verify returns it and schedules nothing', async () => {
    const root = fresh('root');
    await verifyThroughDns(root);
    const www = await addDomain(`www.${root}`);
    expect(www.status).toBe(201);
    expect(www.body).toMatchObject({
      verification_status: 'verified',
      verification_token: '',
      dns_target: `${app.name}.${regionDomain}`,
    });
    const res = await stack.http
      .post(`/api/v1/apps/${app.uuid}/domains/${www.body.uuid}/verify`)
      .set(auth(ws.ownerToken));
    expect(res.status).toBe(200);
    expect(res.body).toEqual(www.body);
    expect(await operationsFor(www.body.uuid)).toBe(0);
    await expect(stack.temporal.workflow.getHandle(`domain-verify/${www.body.uuid}`).describe()).rejects.toBeInstanceOf(
      WorkflowNotFoundError,
    );
    expect(dns.lookups(`_platformapp-verify.www.${root}`)).toBe(0);

    // Only within the workspace, and only for a verified root.
    const otherWs = await seedWorkspace(stack.ds);
    const otherApp = await insertApp(stack.ds, otherWs);
    const foreign = await addDomain(`www.${root}`.replace('www.', 'www.x'), otherApp.uuid, otherWs.ownerToken);
    expect(foreign.body.verification_status).toBe('pending');
    const unverifiedRoot = fresh('plain');
    await addDomain(unverifiedRoot);
    const wwwOfPending = await addDomain(`www.${unverifiedRoot}`);
    expect(wwwOfPending.body).toMatchObject({ verification_status: 'pending', dns_target: '' });
    expect(wwwOfPending.body.verification_token).not.toBe('');
  });

  it('DOM-09 PUT takes domain: {name} and returns the domain; a new name needs verifying again', async () => {
    const { created } = await verifyThroughDns(fresh());
    const name = fresh('renamed');
    const res = await stack.http
      .put(`/api/v1/apps/${app.uuid}/domains/${created.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ domain: { name: name.toUpperCase() } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ uuid: created.uuid, name, verification_status: 'pending', dns_target: '' });
    expect(res.body.verification_token).toMatch(/^berth-verify=/);
    const same = await stack.http
      .put(`/api/v1/apps/${app.uuid}/domains/${created.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ domain: { name } });
    expect(same.body).toEqual(res.body);
    const flat = await stack.http
      .put(`/api/v1/apps/${app.uuid}/domains/${created.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ name });
    expect(flat.status).toBe(400);
  });

  it('DOM-09 renaming during a check is refused with 409 and changes nothing', async () => {
    const name = fresh();
    const created = await addDomain(name);
    await stack.http
      .post(`/api/v1/apps/${app.uuid}/domains/${created.body.uuid}/verify`)
      .set(auth(ws.ownerToken))
      .expect(200);
    const res = await stack.http
      .put(`/api/v1/apps/${app.uuid}/domains/${created.body.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ domain: { name: fresh() } });
    expect(res.status).toBe(409);
    const shown = await stack.http
      .get(`/api/v1/apps/${app.uuid}/domains/${created.body.uuid}`)
      .set(auth(ws.ownerToken));
    expect(shown.body).toMatchObject({ name, verification_status: 'in_progress' });
    await stack.temporal.workflow.getHandle(`domain-verify/${created.body.uuid}`).terminate('test done');
  });

  it('refuses malformed names and platform domains (422) and names in use anywhere (409), writing nothing', async () => {
    const [{ count: before }] = await stack.ds.query(`SELECT count(*)::int AS count FROM domains`);
    for (const bad of [
      'localhost',
      'exa_mple.com',
      '-a.example.com',
      '1.2.3.4',
      'a..b.com',
      '*.example.com',
      'example.com.',
    ]) {
      const res = await addDomain(bad);
      expect(`${bad} ${res.status}`).toBe(`${bad} 422`);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
    }
    expect((await addDomain(`app.${regionDomain}`)).status).toBe(422);
    const name = fresh();
    expect((await addDomain(name)).status).toBe(201);
    const otherWs = await seedWorkspace(stack.ds);
    const otherApp = await insertApp(stack.ds, otherWs);
    expect((await addDomain(name, otherApp.uuid, otherWs.ownerToken)).status).toBe(409);
    expect((await addDomain(name)).status).toBe(409);
    const [{ count: after }] = await stack.ds.query(`SELECT count(*)::int AS count FROM domains`);
    expect(after).toBe(before + 1);
  });

  it("lists an app's domains newest first with page headers; another app's domain is 404", async () => {
    const own = await insertApp(stack.ds, ws, { label: 'list' });
    const a = await addDomain(fresh('a'), own.uuid);
    const b = await addDomain(fresh('b'), own.uuid);
    const list = await stack.http.get(`/api/v1/apps/${own.uuid}/domains`).set(auth(ws.ownerToken));
    expect(list.status).toBe(200);
    expect(list.body.map((d: { uuid: string }) => d.uuid)).toEqual([b.body.uuid, a.body.uuid]);
    expect(list.headers['x-total-count']).toBe('2');
    const cross = await stack.http.get(`/api/v1/apps/${app.uuid}/domains/${a.body.uuid}`).set(auth(ws.ownerToken));
    expect(cross.status).toBe(404);
    const del = await stack.http.delete(`/api/v1/apps/${own.uuid}/domains/${a.body.uuid}`).set(auth(ws.ownerToken));
    expect(del.status).toBe(204);
    expect(
      (await stack.http.get(`/api/v1/apps/${own.uuid}/domains/${a.body.uuid}`).set(auth(ws.ownerToken))).status,
    ).toBe(404);
  });

  it('an unknown app, an app of another workspace and an app in a closed project are 404', async () => {
    const unknown = await stack.http
      .get(`/api/v1/apps/00000000-0000-4000-8000-000000000001/domains`)
      .set(auth(ws.ownerToken));
    expect(unknown.status).toBe(404);
    const otherWs = await seedWorkspace(stack.ds);
    const foreign = await insertApp(stack.ds, otherWs);
    expect((await stack.http.get(`/api/v1/apps/${foreign.uuid}/domains`).set(auth(ws.ownerToken))).status).toBe(404);
    expect((await addDomain(fresh(), foreign.uuid)).status).toBe(404);

    const project = await stack.http
      .post('/api/v1/projects')
      .set(auth(ws.ownerToken))
      .send({ name: `closed-${randomBytes(3).toString('hex')}` });
    const hidden = await insertApp(stack.ds, ws, { projectId: project.body.uuid });
    const insider = await memberWith(stack.ds, ws.uuid, 'insider', ['apps:view', 'apps:manage']);
    const outsider = await memberWith(stack.ds, ws.uuid, 'outsider', ['apps:view', 'apps:manage']);
    await stack.http
      .post(`/api/v1/projects/${project.body.uuid}/restrictions`)
      .set(auth(ws.ownerToken))
      .send({ subject_type: 'role', role_name: 'insider' })
      .expect(201);
    expect((await addDomain(fresh(), hidden.uuid, insider.token)).status).toBe(201);
    expect((await addDomain(fresh(), hidden.uuid, outsider.token)).status).toBe(404);
    expect((await stack.http.get(`/api/v1/apps/${hidden.uuid}/domains`).set(auth(outsider.token))).status).toBe(404);
  });

  it('apps:view reads domains; writes need apps:manage', async () => {
    const viewer = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    expect((await stack.http.get(`/api/v1/apps/${app.uuid}/domains`).set(auth(viewer))).status).toBe(200);
    expect((await addDomain(fresh(), app.uuid, viewer)).status).toBe(403);
    const manager = await tokenWith(stack.ds, ws.uuid, ['apps:manage']);
    expect((await addDomain(fresh(), app.uuid, manager)).status).toBe(201);
  });
});
