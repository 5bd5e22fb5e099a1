import { EXTERNAL_PORT_POOL } from '../../domain/apps';
import { auth, BIG_PLAN, createApp } from '../support/apps';
import { seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let ws: Workspace;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
});
afterAll(() => stack.close());

const ENDPOINT_FIELDS = [
  'endpoint_id',
  'endpoint_hostname',
  'endpoint_ipv4_primary',
  'endpoint_ipv4_secondary',
  'endpoint_ipv6_primary',
  'endpoint_ipv6_secondary',
];

describe('ports', () => {
  it('PRT-01 a public port returns the flat endpoint fields, public_endpoint hostname:port and external_port', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'tcp', resource_id: ws.resourceUuid });
    const res = await stack.http
      .post(`/api/v1/apps/${app.uuid}/ports`)
      .set(auth(ws.ownerToken))
      .send({ port: 5432, public: true });
    expect(res.status).toBe(201);
    for (const f of ENDPOINT_FIELDS) expect(typeof res.body[f]).toBe('string');
    expect(res.body.endpoint_ipv4_primary).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(res.body.endpoint_ipv6_primary).toContain(':');
    expect(res.body.public_endpoint).toBe(`${res.body.endpoint_hostname}:${res.body.external_port}`);
    expect(res.body.external_port).toBeGreaterThanOrEqual(EXTERNAL_PORT_POOL.low);
    expect(res.body.external_port).toBeLessThanOrEqual(EXTERNAL_PORT_POOL.high);
    expect(res.body.external_port).not.toBe(5432);
    const priv = await stack.http.post(`/api/v1/apps/${app.uuid}/ports`).set(auth(ws.ownerToken)).send({ port: 9000 });
    expect(priv.body).toMatchObject({
      public: false,
      external_port: null,
      public_endpoint: null,
      endpoint_hostname: null,
    });
    const list = await stack.http.get(`/api/v1/apps/${app.uuid}/ports`).set(auth(ws.ownerToken));
    expect(list.body.map((p: any) => p.port)).toEqual([5432, 9000]);
    expect(
      (await stack.http.post(`/api/v1/apps/${app.uuid}/ports`).set(auth(ws.ownerToken)).send({ port: 9000 })).status,
    ).toBe(409);
  });

  it('PRT-03 AUTH-08 (ports: apps:operate) expose_publicly makes a port public with the endpoint fields; make_private releases its external port', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'flip', resource_id: ws.resourceUuid });
    const operate = await tokenWith(stack.ds, ws.uuid, ['apps:operate']);
    const port = (await stack.http.post(`/api/v1/apps/${app.uuid}/ports`).set(auth(operate)).send({ port: 6379 })).body;
    const exposed = await stack.http
      .patch(`/api/v1/apps/${app.uuid}/ports/${port.id}/expose_publicly`)
      .set(auth(operate));
    expect(exposed.status).toBe(200);
    expect(exposed.body.public).toBe(true);
    for (const f of ENDPOINT_FIELDS) expect(exposed.body[f]).toEqual(expect.any(String));
    expect(exposed.body.public_endpoint).toBe(`${exposed.body.endpoint_hostname}:${exposed.body.external_port}`);
    const again = await stack.http
      .patch(`/api/v1/apps/${app.uuid}/ports/${port.id}/expose_publicly`)
      .set(auth(operate));
    expect(again.body.external_port).toBe(exposed.body.external_port);
    const priv = await stack.http.patch(`/api/v1/apps/${app.uuid}/ports/${port.id}/make_private`).set(auth(operate));
    expect(priv.status).toBe(200);
    expect(priv.body).toMatchObject({ public: false, external_port: null, public_endpoint: null });
    const [{ n }] = await stack.ds.query(
      `SELECT count(*)::int AS n FROM app_ports WHERE external_port = $1 AND resource_uuid = $2`,
      [exposed.body.external_port, ws.resourceUuid],
    );
    expect(n).toBe(0);
    expect((await stack.http.delete(`/api/v1/apps/${app.uuid}/ports/${port.id}`).set(auth(operate))).status).toBe(204);
    expect((await stack.http.delete(`/api/v1/apps/${app.uuid}/ports/${port.id}`).set(auth(operate))).status).toBe(404);
    const deploy = await tokenWith(stack.ds, ws.uuid, ['apps:deploy', 'apps:manage']);
    expect((await stack.http.post(`/api/v1/apps/${app.uuid}/ports`).set(auth(deploy)).send({ port: 1 })).status).toBe(
      403,
    );
  });

  it('PRT-02 1000 public ports on one resource: all external ports distinct, from the pool, none equal to its internal port', async () => {
    const apps: any[] = [];
    for (let i = 0; i < 4; i++)
      apps.push(await createApp(stack, ws.ownerToken, { name: `pool${i}`, resource_id: ws.resourceUuid }));
    const results: Array<{ internal: number; external: number }> = [];
    const internals = Array.from({ length: 1000 }, (_, i) => EXTERNAL_PORT_POOL.low + i);
    // 10 requests at a time across 4 apps: concurrent allocations race for the same pool.
    for (let i = 0; i < internals.length; i += 10) {
      const batch = internals.slice(i, i + 10).map(async (internal, j) => {
        const app = apps[(i + j) % apps.length];
        const res = await stack.http
          .post(`/api/v1/apps/${app.uuid}/ports`)
          .set(auth(ws.ownerToken))
          .send({ port: internal, public: true });
        if (res.status !== 201) throw new Error(`port ${internal}: ${res.status} ${res.text}`);
        results.push({ internal, external: res.body.external_port });
      });
      await Promise.all(batch);
    }
    expect(results).toHaveLength(1000);
    expect(new Set(results.map((r) => r.external)).size).toBe(1000);
    for (const r of results) {
      expect(r.external).not.toBe(r.internal);
      expect(r.external).toBeGreaterThanOrEqual(EXTERNAL_PORT_POOL.low);
      expect(r.external).toBeLessThanOrEqual(EXTERNAL_PORT_POOL.high);
    }
    const [{ n }] = await stack.ds.query(
      `SELECT count(DISTINCT external_port)::int AS n FROM app_ports WHERE resource_uuid = $1 AND external_port IS NOT NULL`,
      [ws.resourceUuid],
    );
    expect(n).toBe(results.length + 1 /* PRT-01's port */);
  }, 300_000);
});
