import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import request from 'supertest';
import type { DataSource } from 'typeorm';
import { createApp } from '../../api/app';
import type { TokenRow } from '../../api/middleware/auth';
import { MAX_STALENESS_MS, TokenCache } from '../../api/middleware/token-cache';
import { createDataSource } from '../../entities/data-source';
import { ROOT } from '../support/env';
import { memberWith, seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';

const run = promisify(execFile);
let stack: TestStack;
let ws: Workspace;
// A second API instance on the same database: its own DataSource, its own token cache (another process, as far as the database sees).
let ds2: DataSource;
let cache2: TokenCache<TokenRow>;
let http2: ReturnType<typeof request>;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
  ds2 = createDataSource({ url: stack.db.url, poolSize: 4 });
  await ds2.initialize();
  cache2 = new TokenCache<TokenRow>(stack.db.url, stack.logger);
  http2 = request(createApp({ ...stack.apiDeps, dataSource: ds2, tokenCache: cache2 }).callback());
});
afterAll(async () => {
  await cache2.close();
  await ds2.destroy();
  await stack.close();
});

const instances = () => [
  { name: 'first instance', http: stack.http },
  { name: 'second instance', http: http2 },
];
const get = (http: ReturnType<typeof request>, token: string) =>
  http.get('/api/v1/apps').set('Authorization', `Bearer ${token}`);

/** Both instances answer 200 until their caches hold the token (the LISTEN connection is taken on the first request). */
async function warm(token: string): Promise<number> {
  const deadline = Date.now() + 5000;
  for (;;) {
    for (const { http } of instances()) expect((await get(http, token)).status).toBe(200);
    const lookups = jest.spyOn(ds2, 'query');
    await get(http2, token).expect(200);
    const looked = lookups.mock.calls.some(([sql]) => String(sql).includes('FROM api_tokens t'));
    lookups.mockRestore();
    if (!looked) return Date.now();
    if (Date.now() > deadline) throw new Error('the second instance never served the token from its cache');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Milliseconds from `since` until every instance answers `status`; fails past a second. */
async function untilEvery(token: string, status: number, since: number): Promise<number> {
  for (const { name, http } of instances()) {
    for (;;) {
      const res = await get(http, token);
      if (res.status === status) break;
      expect(res.status).toBe(200);
      if (Date.now() - since > MAX_STALENESS_MS)
        throw new Error(`${name} still answered ${res.status} ${Date.now() - since} ms after the change`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  return Date.now() - since;
}

describe('token cache', () => {
  it('AUTH-01 a token revoked by `berth token revoke` answers 401 within a second on every API instance', async () => {
    const token = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    await warm(token);
    await run(process.execPath, [path.join(ROOT, 'bin', 'berth.js'), 'token', 'revoke', token], {
      env: { ...process.env, DATABASE_URL: stack.db.url },
      cwd: ROOT,
    });
    await untilEvery(token, 401, Date.now());
  });

  it('AUTH-01 revocation reaches both instances at once through NOTIFY, not after the cache entry expires', async () => {
    const token = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    const cachedAt = await warm(token);
    await stack.ds.query(
      `UPDATE api_tokens SET revoked_at = now() WHERE token_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex')`,
      [token],
    );
    // the entries were fresh (filled less than a second ago): only the notification can have dropped them this soon
    expect(await untilEvery(token, 401, cachedAt)).toBeLessThan(MAX_STALENESS_MS / 2);
  });

  it('AUTH-02 a role losing a permission answers 403 within a second on every API instance', async () => {
    const { token } = await memberWith(stack.ds, ws.uuid, 'cache-viewer', ['apps:view']);
    await warm(token);
    await stack.ds.query(`UPDATE roles SET permissions = '{}' WHERE workspace_uuid = $1 AND name = 'cache-viewer'`, [
      ws.uuid,
    ]);
    await untilEvery(token, 403, Date.now());
  });

  it('AUTH-02 a member moved to a role without the permission answers 403 within a second on every API instance', async () => {
    const { token, memberUuid } = await memberWith(stack.ds, ws.uuid, 'cache-reader', ['apps:view']);
    await memberWith(stack.ds, ws.uuid, 'cache-nothing', []);
    await warm(token);
    await stack.ds.query(
      `UPDATE members SET role_uuid = (SELECT uuid FROM roles WHERE workspace_uuid = $1 AND name = 'cache-nothing') WHERE uuid = $2`,
      [ws.uuid, memberUuid],
    );
    await untilEvery(token, 403, Date.now());
  });

  it("AUTH-01 a removed member's token answers 401 within a second on every API instance", async () => {
    const { token, memberUuid } = await memberWith(stack.ds, ws.uuid, 'cache-leaver', ['apps:view']);
    await warm(token);
    await stack.ds.query(`DELETE FROM members WHERE uuid = $1`, [memberUuid]);
    await untilEvery(token, 401, Date.now());
  });

  it('AUTH-01 a token past its expiry answers 401 from the cache too', async () => {
    const token = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    await stack.ds.query(
      `UPDATE api_tokens SET expires_at = now() + interval '2 seconds' WHERE token_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex')`,
      [token],
    );
    await warm(token);
    await new Promise((r) => setTimeout(r, 2100));
    for (const { http } of instances()) expect((await get(http, token)).status).toBe(401);
  });
});
