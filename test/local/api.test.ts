import { Client } from 'pg';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { localDataHarness, type LocalDataHarness } from '../support/local-data';
import { eventually, expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';
import { localCapabilities } from '../../activities/provider/local/capabilities';

/** The API and the workflows on the local data driver (without valkey or mysql binaries on its search path). */
describe('add-ons on the local data driver, through the API', () => {
  let stack: TestStack;
  let ws: Workspace;
  let h: LocalDataHarness;
  const owner = () => ({ Authorization: `Bearer ${ws.ownerToken}` });

  beforeAll(async () => {
    stack = await startStack();
    h = await localDataHarness({ db: stack.db, binaries: { searchPath: '/nonexistent' } });
    stack.activityDeps.provider.data = h.driver;
    stack.apiDeps.capabilities = {
      ...localCapabilities({ valkeyServer: undefined, mysqlServer: undefined, workloadNetwork: null }),
      engine: (e) => h.driver.supports(e),
    };
    ws = await seedWorkspace(stack.ds);
    await stack.startWorker();
  });
  afterAll(async () => {
    await h.close();
    await stack.close();
  });

  it('ADD-03 a postgres service becomes healthy and its connection_url works with pg', async () => {
    const created = await stack.http
      .post('/api/v1/services')
      .set(owner())
      .send({ type: 'postgres', label: 'orders', resource_id: ws.resourceUuid });
    expect(created.status).toBe(201);
    const svc = await eventually(
      async () => {
        const res = await stack.http.get(`/api/v1/services/${created.body.uuid}`).set(owner());
        return res.body.state === 'healthy' ? res.body : null;
      },
      { timeoutMs: 60_000, what: 'service healthy' },
    );
    const url = new URL(svc.connection_details.internal.connection_url);
    expect(url.hostname).toBe('127.0.0.1');
    expect(Number(url.port)).toBe(svc.connection_details.internal.port);
    expect(svc.var.DATABASE_URL).toBe(svc.connection_details.internal.connection_url);
    const c = new Client({ connectionString: svc.connection_details.internal.connection_url });
    await c.connect();
    await c.query('CREATE TABLE notes (body text)');
    await c.query(`INSERT INTO notes VALUES ('hello')`);
    expect((await c.query('SELECT body FROM notes')).rows).toEqual([{ body: 'hello' }]);
    await c.end();
    expectNoSecretLeaks(stack, [svc.connection_details.internal.password], {
      allowInResponses: [svc.connection_details.internal.password],
    });
  });

  it('creating a valkey add-on without its server binary is a 422 naming what to install', async () => {
    const res = await stack.http
      .post('/api/v1/services')
      .set(owner())
      .send({ type: 'valkey', label: 'cache', resource_id: ws.resourceUuid });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/valkey-server \(or redis-server\)/);
    expect(res.body.errors).toEqual([expect.objectContaining({ path: 'body.type' })]);
  });

  it('creating a VPC on a local driver without the workload network is a 422 that says why, and nothing is written', async () => {
    // the API asks the driver what it can do (the local driver's capabilities are in force in this file)
    const res = await stack.http.post('/api/v1/vpcs').set(owner()).send({ name: 'net', region_id: ws.regionId });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/workload network, which is off/);
    expect(await stack.ds.query(`SELECT 1 FROM vpcs`)).toEqual([]);
  });
});
