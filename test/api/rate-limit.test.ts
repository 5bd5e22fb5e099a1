import { randomBytes, randomUUID } from 'node:crypto';
import { seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';

/** Issue 16, item 2: per-caller rate limits (BERTH_RATE_LIMIT, here 5 requests per minute). */
const LIMIT = { BERTH_RATE_LIMIT: '5/60s' };
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });

type Res = { status: number; headers: Record<string, string>; body: any };

function expectLimitHeaders(res: Res, remaining: number): void {
  expect(res.headers['ratelimit-limit']).toBe('5');
  expect(res.headers['ratelimit-remaining']).toBe(String(remaining));
  const reset = Number(res.headers['ratelimit-reset']);
  expect(Number.isInteger(reset) && reset >= 1 && reset <= 60).toBe(true);
}

function expectTooMany(res: Res): void {
  expect(res.status).toBe(429);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toEqual(
    expect.objectContaining({
      status: 429,
      title: 'Too Many Requests',
      detail: expect.stringMatching(/5 requests per 60 s/),
    }),
  );
  const retryAfter = Number(res.headers['retry-after']);
  expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
  expect(res.headers['ratelimit-remaining']).toBe('0');
}

describe('rate limits per token', () => {
  let stack: TestStack;
  let ws: Workspace;
  beforeAll(async () => {
    stack = await startStack({ env: LIMIT });
    ws = await seedWorkspace(stack.ds);
  });
  afterAll(() => stack.close());

  it('every answer, errors too, carries RateLimit-Limit/Remaining/Reset counting down; past the limit a 429 problem with Retry-After; another token is unaffected', async () => {
    const token = await tokenWith(stack.ds, ws.uuid, ['projects:view']);
    const get = (path: string) => stack.http.get(path).set(auth(token));
    for (const remaining of [4, 3, 2]) {
      const res = await get('/api/v1/projects');
      expect(res.status).toBe(200);
      expectLimitHeaders(res, remaining);
    }
    const notFound = await get(`/api/v1/projects/${randomUUID()}`);
    expect(notFound.status).toBe(404);
    expectLimitHeaders(notFound, 1);
    const forbidden = await stack.http.post('/api/v1/projects').set(auth(token)).send({ name: 'nope' });
    expect(forbidden.status).toBe(403);
    expectLimitHeaders(forbidden, 0);

    expectTooMany(await get('/api/v1/projects'));
    expectTooMany(await get('/api/v1/projects'));

    // The owner's token (another tenant's caller, same client address) has its own count.
    const other = await stack.http.get('/api/v1/projects').set(auth(ws.ownerToken));
    expect(other.status).toBe(200);
    expectLimitHeaders(other, 4);
  });

  it('the OpenAPI document declares the RateLimit-* headers and the 429 of every operation', async () => {
    const doc = (await stack.http.get('/api/v1/openapi.json').expect(200)).body;
    const list = doc.paths['/api/v1/projects'].get.responses;
    expect(Object.keys(list['200'].headers)).toEqual(
      expect.arrayContaining(['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']),
    );
    expect(Object.keys(list['429'].headers)).toEqual(expect.arrayContaining(['Retry-After', 'RateLimit-Reset']));
    for (const methods of Object.values<Record<string, { responses: Record<string, unknown> }>>(doc.paths)) {
      for (const op of Object.values(methods)) expect(op.responses['429']).toBeDefined();
    }
  });

  it('unauthenticated requests are limited per client address', async () => {
    for (const remaining of [4, 3, 2, 1, 0]) {
      const res = await stack.http.get('/api/v1/projects');
      expect(res.status).toBe(401);
      expectLimitHeaders(res, remaining);
    }
    expectTooMany(await stack.http.get('/api/v1/projects'));
  });
});

describe('rate limits on endpoints without a token', () => {
  let stack: TestStack;
  let ws: Workspace;
  beforeAll(async () => {
    stack = await startStack({ env: LIMIT });
    ws = await seedWorkspace(stack.ds);
  });
  afterAll(() => stack.close());

  it('the code-host endpoint is limited per app and client address; refused deliveries spend the address allowance, so guessing tokens is limited too', async () => {
    const app = randomUUID();
    const deliver = (uuid: string) =>
      stack.http
        .post(`/api/v1/code_host/apps/${uuid}/events`)
        .set('X-GitHub-Event', 'ping')
        .set('Content-Type', 'application/json')
        .send('{}');
    for (const remaining of [4, 3, 2, 1, 0]) {
      const res = await deliver(app);
      expect(res.status).toBe(401);
      expectLimitHeaders(res, remaining);
    }
    expectTooMany(await deliver(app));
    // Another app from the same address: its own count, but the refusal spends the address's allowance.
    expectTooMany(await deliver(randomUUID()));
    // Guessed tokens: each is a new key, the refusal counts against the address.
    expectTooMany(await stack.http.get('/api/v1/projects').set(auth(`brt_${randomBytes(32).toString('base64url')}`)));
    // A real token from that address is its own caller.
    const res = await stack.http.get('/api/v1/projects').set(auth(ws.ownerToken));
    expect(res.status).toBe(200);
    expectLimitHeaders(res, 4);
  });
});
