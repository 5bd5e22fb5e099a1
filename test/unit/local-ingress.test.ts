import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startLocalIngress, type LocalIngress } from '../../activities/provider/local/ingress/ingress';
import { createObjectStoreStorage } from '../../activities/provider/object-store-storage';
import type { AppEventSink } from '../../activities/provider/local/contracts';
import { SecretBox } from '../../domain/secret-box';
import { insertApp, type AppRow } from '../support/app-rows';
import { freshDatabase, type TestDatabase } from '../support/db';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { startObjectStore } from '../support/object-store';
import { captureLogger } from '../support/stack';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A real request to the ingress with the Host it is routed by. */
function get(
  ingress: LocalIngress,
  host: string,
  urlPath = '/',
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: ingress.port, path: urlPath, headers: { host, ...headers }, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A real backend: answers its name and the forwarding headers it saw; echoes the bytes of an upgraded connection. */
async function backend(name: string): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        name,
        path: req.url,
        host: req.headers.host,
        forwarded: {
          for: req.headers['x-forwarded-for'],
          proto: req.headers['x-forwarded-proto'],
          host: req.headers['x-forwarded-host'],
        },
      }),
    );
  });
  server.on('upgrade', (_req, socket: Socket) => {
    socket.write('HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: websocket\r\n\r\n');
    socket.on('data', (d: Buffer) => socket.write(`${name}:${d.toString()}`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

describe('local ingress (real HTTP through undici, WebSocket through http-proxy-3)', () => {
  let db: TestDatabase;
  let ws: Workspace;
  let ingress: LocalIngress;
  let a: { server: Server; port: number };
  let b: { server: Server; port: number };
  let siteDir: string;
  const box = new SecretBox([{ kid: 't', key: randomBytes(32) }]);
  const traffic: string[] = [];
  const events: AppEventSink = {
    health: async () => undefined,
    liveStatus: async () => undefined,
    traffic: async (appUuid) => {
      traffic.push(appUuid);
    },
  };
  const hostOf = (app: AppRow) => `${app.name}.local.berth.localhost`;
  const running = async (): Promise<AppRow> => {
    const app = await insertApp(db.ds, ws);
    ingress.routes.setBackends(app.uuid, [{ kind: 'process', host: '127.0.0.1', port: a.port }]);
    return app;
  };

  const addDomain = (app: AppRow, name: string, status: string) =>
    db.ds.query(
      `INSERT INTO domains (uuid, workspace_uuid, app_uuid, name, verification_status, verification_token, dns_target)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        randomUUID(),
        ws.uuid,
        app.uuid,
        name,
        status,
        status === 'verified' ? null : 'token',
        status === 'verified' ? hostOf(app) : null,
      ],
    );

  beforeAll(async () => {
    db = await freshDatabase();
    ws = await seedWorkspace(db.ds);
    a = await backend('a');
    b = await backend('b');
    ingress = await startLocalIngress({
      dataSource: db.ds,
      secretBox: box,
      logger: captureLogger().logger,
      events,
      port: 0,
      trafficSignalIntervalMs: 60_000,
    });
    siteDir = await mkdtemp(path.join(tmpdir(), 'berth-ingress-'));
  });

  afterAll(async () => {
    await ingress?.close();
    a?.server.close();
    b?.server.close();
    await rm(siteDir, { recursive: true, force: true });
    await db?.drop();
  });

  it("routes by the public URL host (port stripped, any case) and adds X-Forwarded-For/Proto/Host, dropping the client's own", async () => {
    const app = await running();
    const res = await get(ingress, `${hostOf(app).toUpperCase()}:443`, '/hello?x=1', { 'x-forwarded-for': '6.6.6.6' });
    expect(res.status).toBe(200);
    const seen = JSON.parse(res.body);
    expect(seen).toMatchObject({ name: 'a', path: '/hello?x=1', host: `${hostOf(app).toUpperCase()}:443` });
    expect(seen.forwarded).toEqual({ for: '127.0.0.1', proto: 'http', host: `${hostOf(app).toUpperCase()}:443` });
    expect((await get(ingress, 'nobody-here.local.berth.localhost')).status).toBe(404);
    expect((await get(ingress, `${app.name}.other-region.example`)).status).toBe(404);
  });

  it('routes a VERIFIED custom domain of the app; a pending or failed one is not routed', async () => {
    const app = await running();
    const add = (name: string, status: string) => addDomain(app, name, status);
    await add(`www.${app.name}.example.com`, 'verified');
    await add(`pending.${app.name}.example.com`, 'pending');
    await add(`failed.${app.name}.example.com`, 'failed');
    expect((await get(ingress, `WWW.${app.name}.example.com:8081`)).status).toBe(200);
    expect((await get(ingress, `pending.${app.name}.example.com`)).status).toBe(404);
    expect((await get(ingress, `failed.${app.name}.example.com`)).status).toBe(404);
  });

  it('spreads requests round-robin over the backends the driver set, and follows a new set', async () => {
    const app = await running();
    ingress.routes.setBackends(app.uuid, [
      { kind: 'process', host: '127.0.0.1', port: a.port },
      { kind: 'process', host: '127.0.0.1', port: b.port },
    ]);
    const names = [];
    for (let i = 0; i < 4; i++) names.push(JSON.parse((await get(ingress, hostOf(app))).body).name);
    expect(names).toEqual(['a', 'b', 'a', 'b']);
    ingress.routes.setBackends(app.uuid, [{ kind: 'process', host: '127.0.0.1', port: b.port }]);
    expect(JSON.parse((await get(ingress, hostOf(app))).body).name).toBe('b');
    ingress.routes.remove(app.uuid);
    const gone = await get(ingress, hostOf(app));
    expect(gone.status).toBe(503);
    expect(gone.headers['retry-after']).toBe('5');
  });

  it("HTTP Basic auth: 401 with WWW-Authenticate without or with wrong credentials, 200 with the app's own", async () => {
    const app = await running();
    await db.ds.query(
      `UPDATE apps SET basic_auth_enabled = true, basic_auth_username = 'ann', basic_auth_password_sealed = $2 WHERE uuid = $1`,
      [app.uuid, box.seal('s3cret:with-colon')],
    );
    const basic = (u: string, p: string) => ({ authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}` });
    const none = await get(ingress, hostOf(app));
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toMatch(/^Basic realm=/);
    expect(none.body).not.toContain('s3cret');
    expect((await get(ingress, hostOf(app), '/', basic('ann', 'wrong'))).status).toBe(401);
    expect((await get(ingress, hostOf(app), '/', basic('bob', 's3cret:with-colon'))).status).toBe(401);
    expect((await get(ingress, hostOf(app), '/', basic('ann', 's3cret:with-colon'))).status).toBe(200);
  });

  it('APP-05 the public URL of a private_access app is unreachable (404), its custom domain too', async () => {
    const app = await running();
    await db.ds.query(`UPDATE apps SET private_access = true WHERE uuid = $1`, [app.uuid]);
    await addDomain(app, `${app.name}.example.org`, 'verified');
    expect((await get(ingress, hostOf(app))).status).toBe(404);
    expect((await get(ingress, `${app.name}.example.org`)).status).toBe(404);
  });

  it('an app in maintenance answers 503 with Retry-After, without reaching its backend', async () => {
    const app = await running();
    await db.ds.query(`UPDATE apps SET maintenance = true WHERE uuid = $1`, [app.uuid]);
    const res = await get(ingress, hostOf(app));
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBeDefined();
    expect(res.body).toMatch(/maintenance/);
  });

  it('APP-16 the first request to a sleeping app signals traffic (which starts it) and gets 503 with Retry-After', async () => {
    const app = await insertApp(db.ds, ws, { state: 'sleeping' });
    const res = await get(ingress, hostOf(app));
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(traffic).toContain(app.uuid);
  });

  it('APP-15 requests to an awake app signal traffic (what keeps a free-plan app awake), throttled per app', async () => {
    const app = await running();
    for (let i = 0; i < 5; i++) expect((await get(ingress, hostOf(app))).status).toBe(200);
    expect(traffic.filter((u) => u === app.uuid)).toHaveLength(1);
  });

  it('a starting app with no backend yet answers 503 with Retry-After; a stopped one is not served', async () => {
    for (const state of ['started', 'start_scheduled', 'restart_scheduled', 'deploying']) {
      const app = await insertApp(db.ds, ws, { state });
      const res = await get(ingress, hostOf(app));
      expect([state, res.status, res.headers['retry-after']]).toEqual([state, 503, '5']);
    }
    const deploying = await insertApp(db.ds, ws, { state: 'deploying' });
    ingress.routes.setBackends(deploying.uuid, [{ kind: 'process', host: '127.0.0.1', port: a.port }]);
    expect((await get(ingress, hostOf(deploying))).status).toBe(200);
    const stopped = await insertApp(db.ds, ws, { state: 'stopped' });
    ingress.routes.setBackends(stopped.uuid, [{ kind: 'process', host: '127.0.0.1', port: a.port }]);
    expect((await get(ingress, hostOf(stopped))).status).toBe(503);
  });

  it('serves a static backend from its folder: index.html, content types, 404 for missing files, no way out of the folder', async () => {
    const root = path.join(siteDir, 'public');
    await mkdir(path.join(root, 'docs'), { recursive: true });
    await writeFile(path.join(root, 'index.html'), '<h1>home</h1>');
    await writeFile(path.join(root, 'docs', 'index.html'), '<h1>docs</h1>');
    await writeFile(path.join(root, 'app.css'), 'body{}');
    await writeFile(path.join(siteDir, 'secret.txt'), 'outside the root');
    await symlink(path.join(siteDir, 'secret.txt'), path.join(root, 'link.txt'));
    await symlink(siteDir, path.join(root, 'up'));
    const app = await insertApp(db.ds, ws);
    ingress.routes.setBackends(app.uuid, [{ kind: 'static', root }]);
    const home = await get(ingress, hostOf(app));
    expect([home.status, home.headers['content-type'], home.body]).toEqual([
      200,
      'text/html; charset=utf-8',
      '<h1>home</h1>',
    ]);
    expect((await get(ingress, hostOf(app), '/docs/')).body).toBe('<h1>docs</h1>');
    expect((await get(ingress, hostOf(app), '/docs')).headers.location).toBe('/docs/');
    expect((await get(ingress, hostOf(app), '/app.css')).headers['content-type']).toBe('text/css; charset=utf-8');
    expect((await get(ingress, hostOf(app), '/missing.html')).status).toBe(404);
    for (const escape of [
      '/../secret.txt',
      '/%2e%2e/secret.txt',
      '/docs/..%2f..%2fsecret.txt',
      '/link.txt',
      '/up/secret.txt',
      '/%00',
    ]) {
      const res = await get(ingress, hostOf(app), escape);
      expect([escape, res.status]).toEqual([escape, expect.any(Number)]);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.body).not.toContain('outside the root');
    }
  });

  it('a backend that is gone answers 502, and the ingress keeps serving', async () => {
    const app = await running();
    const dead = await backend('dead');
    await new Promise<void>((resolve) => dead.server.close(() => resolve()));
    ingress.routes.setBackends(app.uuid, [{ kind: 'process', host: '127.0.0.1', port: dead.port }]);
    expect((await get(ingress, hostOf(app))).status).toBe(502);
    ingress.routes.setBackends(app.uuid, [{ kind: 'process', host: '127.0.0.1', port: a.port }]);
    expect((await get(ingress, hostOf(app))).status).toBe(200);
  });

  it('streams a request body to the backend (sized or chunked) and its status, headers and body back; hop-by-hop headers stay on their hop', async () => {
    const app = await running();
    const echo = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.writeHead(201, {
          'set-cookie': ['a=1', 'b=2'],
          'x-seen-keep-alive': String(req.headers['keep-alive']),
          'keep-alive': 'timeout=9',
        });
        res.end(`${req.method} ${req.headers['content-type']} ${Buffer.concat(chunks).toString('utf8')}`);
      });
    });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    ingress.routes.setBackends(app.uuid, [
      { kind: 'process', host: '127.0.0.1', port: (echo.address() as AddressInfo).port },
    ]);
    const post = (headers: Record<string, string>, parts: string[]) =>
      new Promise<Answer>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port: ingress.port,
            path: '/in',
            method: 'POST',
            agent: false,
            headers: { host: hostOf(app), 'content-type': 'text/plain', 'keep-alive': 'timeout=5', ...headers },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
            );
          },
        );
        req.on('error', reject);
        for (const p of parts) req.write(p);
        req.end();
      });
    try {
      const sized = await post({ 'content-length': '11' }, ['hello', ' world']);
      expect(sized).toMatchObject({ status: 201, body: 'POST text/plain hello world' });
      expect(sized.headers['set-cookie']).toEqual(['a=1', 'b=2']);
      expect(sized.headers['x-seen-keep-alive']).toBe('undefined');
      expect(sized.headers['keep-alive']).not.toBe('timeout=9');
      expect((await post({}, ['chunk', 'ed', ' body'])).body).toBe('POST text/plain chunked body');
    } finally {
      echo.close();
    }
  });

  it('proxies a WebSocket (HTTP upgrade) to the backend', async () => {
    const app = await running();
    const socket = await new Promise<Socket>((resolve, reject) => {
      const req = request({
        host: '127.0.0.1',
        port: ingress.port,
        path: '/ws',
        agent: false,
        headers: {
          host: hostOf(app),
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': randomBytes(16).toString('base64'),
        },
      });
      req.on('upgrade', (_res, s: Socket) => resolve(s));
      req.on('response', (res) => reject(new Error(`no upgrade: ${res.statusCode}`)));
      req.on('error', reject);
      req.end();
    });
    const echoed = await new Promise<string>((resolve) => {
      socket.once('data', (d: Buffer) => resolve(d.toString()));
      socket.write('ping');
    });
    socket.destroy();
    expect(echoed).toBe('a:ping');
  });

  it('a settings change in the database applies within about a second', async () => {
    const app = await running();
    expect((await get(ingress, hostOf(app))).status).toBe(200);
    await db.ds.query(`UPDATE apps SET maintenance = true WHERE uuid = $1`, [app.uuid]);
    const changed = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - changed < 3000) {
      status = (await get(ingress, hostOf(app))).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe(503);
    expect(Date.now() - changed).toBeLessThan(1500);
  });
});

describe('local ingress: static sites from the object store', () => {
  let db: TestDatabase;
  let store: Awaited<ReturnType<typeof startObjectStore>>;
  let ingress: LocalIngress;
  let storage: ReturnType<typeof createObjectStoreStorage>;

  beforeAll(async () => {
    db = await freshDatabase();
    store = await startObjectStore();
    storage = createObjectStoreStorage({ db: db.ds, store });
    ingress = await startLocalIngress({
      dataSource: db.ds,
      secretBox: new SecretBox([{ kid: 't', key: randomBytes(32) }]),
      logger: captureLogger().logger,
      port: 0,
      events: { health: async () => undefined, liveStatus: async () => undefined, traffic: async () => undefined },
      sites: { domain: 'sites.test.localhost', storage },
      bucketEndpoint: store.endpoint,
    });
    await storage.createBucket('site-docs');
    await storage.createBucket('pub-assets');
    await storage.putObject('pub-assets', 'logo.txt', Buffer.from('a public logo'), 'text/plain');
    await storage.setPublicRead('pub-assets', true);
    const file = (p: string, body: string, type: string) => ({ path: p, body: Buffer.from(body), contentType: type });
    await storage.publishFiles('site-docs', 'site/', [
      file('index.html', '<h1>docs home</h1>', 'text/html; charset=utf-8'),
      file('guide/index.html', '<h1>guide</h1>', 'text/html; charset=utf-8'),
      file('app.css', 'body{}', 'text/css; charset=utf-8'),
    ]);
    await storage.putObject('site-docs', 'private.txt', Buffer.from('outside the site prefix'), 'text/plain');
    await storage.routeSite('docs.sites.test.localhost', 'site-docs', 'site/');
  });

  afterAll(async () => {
    await ingress?.close();
    await store?.dispose();
    await db?.drop();
  });

  it("SIT-08 serves a static site's published content at its URL host <name>.<sites domain>", async () => {
    const home = await get(ingress, 'DOCS.sites.test.localhost:8081');
    expect([home.status, home.headers['content-type'], home.body]).toEqual([
      200,
      'text/html; charset=utf-8',
      '<h1>docs home</h1>',
    ]);
    expect((await get(ingress, 'docs.sites.test.localhost', '/guide/')).body).toBe('<h1>guide</h1>');
    expect((await get(ingress, 'docs.sites.test.localhost', '/guide')).headers.location).toBe('/guide/');
    expect((await get(ingress, 'docs.sites.test.localhost', '/app.css')).headers['content-type']).toBe(
      'text/css; charset=utf-8',
    );
    expect((await get(ingress, 'docs.sites.test.localhost', '/missing.html')).status).toBe(404);
    expect((await get(ingress, 'other.sites.test.localhost')).status).toBe(404);
  });

  it("a site path cannot reach objects outside the site's prefix", async () => {
    for (const escape of ['/../private.txt', '/%2e%2e/private.txt', '/guide/..%2f..%2fprivate.txt']) {
      const res = await get(ingress, 'docs.sites.test.localhost', escape);
      expect([escape, res.status]).toEqual([escape, 404]);
    }
  });

  it("BKT-03 a public bucket's objects are served anonymously at its public_endpoint host; nothing else is", async () => {
    const logo = await get(ingress, 'pub-assets.storage.local.test.localhost', '/logo.txt');
    expect([logo.status, logo.body]).toEqual([200, 'a public logo']);
    const listing = await get(ingress, 'pub-assets.storage.local.test.localhost', '/');
    expect([listing.status, listing.body]).toEqual([403, expect.stringContaining('<Code>AccessDenied</Code>')]);
    const privateObject = await get(ingress, 'site-docs.storage.local.test.localhost', '/private.txt');
    expect(privateObject.status).toBe(403);
    const put = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: ingress.port,
          method: 'PUT',
          path: '/planted.txt',
          headers: { host: 'pub-assets.storage.local.test.localhost', 'content-length': 4 },
          agent: false,
        },
        (res) => resolve(res.resume().statusCode!),
      );
      req.on('error', reject);
      req.end('evil');
    });
    expect(put).toBe(403);
    expect(await storage.headObject('pub-assets', 'planted.txt')).toBeNull();
  });

  it('an unrouted site stops being served within about a second', async () => {
    await storage.routeSite('gone.sites.test.localhost', 'site-docs', 'site/');
    expect((await get(ingress, 'gone.sites.test.localhost')).status).toBe(200);
    await storage.unrouteSite('gone.sites.test.localhost');
    await new Promise((r) => setTimeout(r, 1100));
    expect((await get(ingress, 'gone.sites.test.localhost')).status).toBe(404);
  });
});
