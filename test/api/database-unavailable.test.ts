import { createServer, type Server } from 'node:http';
import request from 'supertest';
import { QueryFailedError, type DataSource } from 'typeorm';
import { createApp } from '../../api/app';
import { isDatabaseUnavailable } from '../../api/middleware/errors';
import { createDataSource } from '../../entities/data-source';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';

/**
 * PostgreSQL going away under a running API (a loopback proxy in front of the real server
 * cuts, refuses, or swallows connections): every request is answered 503 problem+json with
 * Retry-After, promptly (the pool's connect timeout bounds it), never 500 and never a hang;
 * when the link returns the same process answers 200 again.
 */
let stack: TestStack;
let proxy: TcpProxy;
let ds: DataSource;
let server: Server;
let ws: Workspace;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
  const url = new URL(stack.db.url);
  proxy = await startTcpProxy(Number(url.port), url.hostname);
  url.port = String(proxy.port);
  ds = createDataSource({ url: url.toString(), poolSize: 4, connectTimeoutMs: 1_000 });
  await ds.initialize();
  server = createServer(createApp({ ...stack.apiDeps, dataSource: ds }).callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await proxy?.close();
  if (ds?.isInitialized) await ds.destroy().catch(() => {});
  await stack?.close();
});

const list = () =>
  request(server).get('/api/v1/webhooks').set('Authorization', `Bearer ${ws.ownerToken}`).timeout(8_000);

describe('database unavailable', () => {
  it('answers 503 problem+json with Retry-After while PostgreSQL is unreachable, and 200 again once it is back', async () => {
    expect((await list()).status).toBe(200);
    for (const mode of ['refuse', 'blackhole'] as const) {
      proxy.setMode(mode);
      for (let i = 0; i < 3; i++) {
        const started = Date.now();
        const res = await list();
        expect(res.status).toBe(503);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.headers['retry-after']).toMatch(/^\d+$/);
        expect(res.body).toMatchObject({ status: 503, title: 'Service Unavailable' });
        expect(Date.now() - started).toBeLessThan(5_000);
      }
      proxy.setMode('forward');
      expect((await list()).status).toBe(200);
    }
    const warned = stack.logLines.filter((l) => l.includes('database unreachable'));
    expect(warned.length).toBeGreaterThanOrEqual(6);
    expect(stack.logLines.some((l) => l.includes('unhandled error'))).toBe(false);
  });

  it('classifies connection failures as unavailable and constraint or syntax errors as not', () => {
    const driver = (code: string, message = 'x') =>
      new QueryFailedError('SELECT 1', [], Object.assign(new Error(message), { code }));
    for (const code of ['57P01', '57P03', '08006', '08001', '53300'])
      expect(isDatabaseUnavailable(driver(code))).toBe(true);
    expect(
      isDatabaseUnavailable(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5'), { code: 'ECONNREFUSED' })),
    ).toBe(true);
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isDatabaseUnavailable(new Error('timeout exceeded when trying to connect'))).toBe(true);
    for (const code of ['23505', '42601', '22P02']) expect(isDatabaseUnavailable(driver(code))).toBe(false);
    expect(isDatabaseUnavailable(new Error('something else'))).toBe(false);
  });
});
