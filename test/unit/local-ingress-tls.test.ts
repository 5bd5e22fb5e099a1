import { execFile } from 'node:child_process';
import { randomBytes, randomUUID, X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { startLocalIngress, type LocalIngress } from '../../activities/provider/local/ingress/ingress';
import type { AppEventSink } from '../../activities/provider/local/contracts';
import { IngressCertificates } from '../../activities/provider/local/ingress/tls/certificates';
import { openLocalCa, type LocalCa } from '../../activities/provider/local/ingress/tls/local-ca';
import { SecretBox } from '../../domain/secret-box';
import { insertApp, type AppRow } from '../support/app-rows';
import { freshDatabase, type TestDatabase } from '../support/db';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { captureLogger } from '../support/stack';

interface CurlAnswer {
  status: number;
  version: string;
  headers: Record<string, string>;
  body: string;
}

/** curl as a user runs it: the name resolved to loopback, the CA given by file. */
function curl(args: string[]): Promise<CurlAnswer> {
  return new Promise((resolve, reject) => {
    execFile('curl', ['-sS', '-D', '-', '-w', '\n%{http_version}', ...args], (err, stdout, stderr) => {
      if (err) return reject(new Error(`curl ${args.join(' ')}: ${stderr || err.message}`));
      const version = stdout.slice(stdout.lastIndexOf('\n') + 1);
      const text = stdout.slice(0, stdout.lastIndexOf('\n'));
      const split = text.indexOf('\r\n\r\n');
      const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
      resolve({ status: Number(statusLine!.split(' ')[1]), version, headers, body: text.slice(split + 4) });
    });
  });
}

/** curl over HTTPS to `host` at the ingress's TLS port (the name resolved to loopback), trusting `caFile`. */
function curlHttps(ingress: LocalIngress, caFile: string, host: string, urlPath = '/', extra: string[] = []) {
  return curl([
    '--cacert',
    caFile,
    '--resolve',
    `${host}:${ingress.tlsPort}:127.0.0.1`,
    ...extra,
    `https://${host}:${ingress.tlsPort}${urlPath}`,
  ]);
}

/** A backend answering what it saw: path, host, forwarding headers, the request body; echoes upgraded bytes. */
async function backend(): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', connection: 'keep-alive' });
      res.end(
        JSON.stringify({
          path: req.url,
          host: req.headers.host,
          proto: req.headers['x-forwarded-proto'],
          port: req.headers['x-forwarded-port'],
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
  });
  server.on('upgrade', (_req, socket: Socket) => {
    socket.write('HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: websocket\r\n\r\n');
    socket.on('data', (d: Buffer) => socket.write(`echo:${d.toString()}`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** The certificate the ingress shows for `servername` (verified against `ca`), or the handshake's error. */
function peerCertificate(port: number, servername: string, ca: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, servername, ca, ALPNProtocols: ['http/1.1'] }, () => {
      const cert = socket.getPeerX509Certificate()!;
      socket.destroy();
      resolve(cert);
    });
    socket.on('error', reject);
  });
}

describe('local ingress over HTTPS (local CA, SNI, ALPN, redirect)', () => {
  let db: TestDatabase;
  let ws: Workspace;
  let ingress: LocalIngress;
  let ca: LocalCa;
  let caDir: string;
  let be: { server: Server; port: number };
  const box = new SecretBox([{ kid: 't', key: randomBytes(32) }]);
  const events: AppEventSink = {
    health: async () => undefined,
    liveStatus: async () => undefined,
    traffic: async () => undefined,
  };
  const hostOf = (app: AppRow) => `${app.name}.local.berth.localhost`;
  const running = async (): Promise<AppRow> => {
    const app = await insertApp(db.ds, ws);
    ingress.routes.setBackends(app.uuid, [{ kind: 'process', host: '127.0.0.1', port: be.port }]);
    return app;
  };
  const https = (host: string, urlPath = '/', extra: string[] = []) =>
    curlHttps(ingress, ca.rootPath, host, urlPath, extra);
  const addDomain = async (app: AppRow, name: string) => {
    const uuid = randomUUID();
    await db.ds.query(
      `INSERT INTO domains (uuid, workspace_uuid, app_uuid, name, verification_status, dns_target) VALUES ($1, $2, $3, $4, 'verified', $5)`,
      [uuid, ws.uuid, app.uuid, name, hostOf(app)],
    );
    return uuid;
  };

  beforeAll(async () => {
    db = await freshDatabase();
    ws = await seedWorkspace(db.ds);
    be = await backend();
    caDir = await mkdtemp(path.join(tmpdir(), 'berth-ca-'));
    ca = await openLocalCa(caDir, box);
    ingress = await startLocalIngress({
      dataSource: db.ds,
      secretBox: box,
      logger: captureLogger().logger,
      events,
      port: 0,
      settingsTtlMs: 200,
      tls: { port: 0, certificates: new IngressCertificates(db.ds, box, ca, 200) },
    });
  });

  afterAll(async () => {
    await ingress?.close();
    be?.server.closeAllConnections();
    be?.server.close();
    await rm(caDir, { recursive: true, force: true });
    await db?.drop();
  });

  it('creates the local CA once under its folder, its key sealed with the keyring; a second start reopens the same root', async () => {
    const sealed = await readFile(path.join(caDir, 'local-ca.key.sealed'), 'utf8');
    expect(sealed).not.toContain('PRIVATE KEY');
    expect(box.open(sealed.trim())).toContain('-----BEGIN PRIVATE KEY-----');
    const root = new X509Certificate(await readFile(ca.rootPath, 'utf8'));
    expect(root.ca).toBe(true);
    const again = await openLocalCa(caDir, box);
    expect(again.rootPem).toBe(ca.rootPem);
    // a leaf of the reopened CA still chains to the root on disk
    const leaf = new X509Certificate((await again.issue('x.localhost')).cert);
    expect(leaf.verify(root.publicKey)).toBe(true);
    expect(leaf.subjectAltName).toBe('DNS:x.localhost');
  });

  it('answers an app at its public host over HTTPS with the local CA (curl --cacert), HTTP/2 by ALPN, HTTP/1.1 when asked; X-Forwarded-Proto https', async () => {
    const app = await running();
    const h2 = await https(hostOf(app), '/hi?x=1');
    expect(h2.status).toBe(200);
    expect(h2.version).toBe('2');
    expect(JSON.parse(h2.body)).toEqual({
      path: '/hi?x=1',
      host: `${hostOf(app)}:${ingress.tlsPort}`,
      proto: 'https',
      port: String(ingress.tlsPort),
      body: '',
    });
    const h1 = await https(hostOf(app), '/', ['--http1.1']);
    expect(h1.status).toBe(200);
    expect(h1.version).toBe('1.1');
    const cert = await peerCertificate(ingress.tlsPort!, hostOf(app), ca.rootPem);
    expect(cert.subjectAltName).toBe(`DNS:${hostOf(app)}`);
  });

  it('streams a request body to the backend over HTTP/2 and over HTTP/1.1', async () => {
    const app = await running();
    for (const version of ['--http2', '--http1.1']) {
      const sent = await https(hostOf(app), '/post', [version, '--data-binary', 'a body of bytes']);
      expect(JSON.parse(sent.body).body).toBe('a body of bytes');
    }
  });

  it('plain HTTP to an app redirects (308) to the same path over HTTPS; the ACME challenge path is answered, never redirected', async () => {
    const app = await running();
    const plain = await curl(['-H', `Host: ${hostOf(app)}`, `${ingress.url}/a/b?c=d`]);
    expect(plain.status).toBe(308);
    expect(plain.headers.location).toBe(`https://${hostOf(app)}:${ingress.tlsPort}/a/b?c=d`);
    const token = randomBytes(16).toString('base64url');
    await db.ds.query(`INSERT INTO acme_challenges (token, key_authorization, domain_name) VALUES ($1, $2, $3)`, [
      token,
      `${token}.thumbprint`,
      hostOf(app),
    ]);
    const challenge = await curl(['-H', `Host: ${hostOf(app)}`, `${ingress.url}/.well-known/acme-challenge/${token}`]);
    expect(challenge.status).toBe(200);
    expect(challenge.body.trim()).toBe(`${token}.thumbprint`);
    // a token of no open order is the app's to answer, over plain HTTP
    const other = await curl(['-H', `Host: ${hostOf(app)}`, `${ingress.url}/.well-known/acme-challenge/unknown`]);
    expect(other.status).toBe(200);
    expect(JSON.parse(other.body).path).toBe('/.well-known/acme-challenge/unknown');
  });

  it('APP-05 a private app is unreachable over HTTPS as over HTTP (404, no redirect); Basic auth and maintenance hold over HTTPS', async () => {
    const app = await running();
    await db.ds.query(`UPDATE apps SET private_access = true WHERE uuid = $1`, [app.uuid]);
    expect((await https(hostOf(app))).status).toBe(404);
    expect((await curl(['-H', `Host: ${hostOf(app)}`, `${ingress.url}/`])).status).toBe(404);
    const guarded = await running();
    await db.ds.query(
      `UPDATE apps SET basic_auth_enabled = true, basic_auth_username = 'u', basic_auth_password_sealed = $2 WHERE uuid = $1`,
      [guarded.uuid, box.seal('pw')],
    );
    expect((await https(hostOf(guarded))).status).toBe(401);
    expect((await https(hostOf(guarded), '/', ['-u', 'u:pw'])).status).toBe(200);
    await db.ds.query(`UPDATE apps SET maintenance = true WHERE uuid = $1`, [guarded.uuid]);
    await new Promise((r) => setTimeout(r, 300)); // the settings cache keeps a row 200 ms here
    expect((await https(hostOf(guarded), '/', ['-u', 'u:pw'])).status).toBe(503);
  });

  it('proxies a WebSocket upgrade over HTTPS (HTTP/1.1)', async () => {
    const app = await running();
    const socket = tlsConnect({ host: '127.0.0.1', port: ingress.tlsPort!, servername: hostOf(app), ca: ca.rootPem });
    await new Promise<void>((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject));
    socket.write(
      `GET /ws HTTP/1.1\r\nhost: ${hostOf(app)}\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: ${randomBytes(16).toString('base64')}\r\n\r\n`,
    );
    let seen = '';
    await new Promise<void>((resolve) =>
      socket.on('data', (d: Buffer) => {
        seen += d.toString();
        if (seen.includes('\r\n\r\n') && !seen.includes('echo:')) socket.write('ping');
        if (seen.includes('echo:ping')) resolve();
      }),
    );
    socket.destroy();
    expect(seen).toMatch(/^HTTP\/1.1 101/);
  });

  it('serves a verified custom domain with the certificate uploaded for it (by SNI); a name with no certificate gets no handshake', async () => {
    const app = await running();
    const name = `shop-${randomBytes(3).toString('hex')}.example.test`;
    await addDomain(app, name);
    // the owner's certificate, from a CA of their own
    const ownDir = await mkdtemp(path.join(tmpdir(), 'berth-own-ca-'));
    const own = await openLocalCa(ownDir, box);
    const issued = await own.issue(name);
    const cert = new X509Certificate(issued.cert);
    await db.ds.query(
      `INSERT INTO app_tls_certificates (uuid, app_uuid, subject, issuer, names, fingerprint_sha256, not_before, not_after, certificate_pem, private_key_sealed)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        randomUUID(),
        app.uuid,
        cert.subject,
        cert.issuer,
        [name],
        cert.fingerprint256,
        new Date(cert.validFrom),
        new Date(cert.validTo),
        issued.cert,
        box.seal(issued.key),
      ],
    );
    const shown = await peerCertificate(ingress.tlsPort!, name, own.rootPem);
    expect(shown.fingerprint256).toBe(cert.fingerprint256);
    const res = await curlHttps(ingress, own.rootPath, name);
    expect(res.status).toBe(200);
    // plain HTTP to the domain now redirects too
    expect((await curl(['-H', `Host: ${name}`, `${ingress.url}/`])).status).toBe(308);
    await expect(peerCertificate(ingress.tlsPort!, 'nothing-here.example.test', ca.rootPem)).rejects.toThrow();
    await rm(ownDir, { recursive: true, force: true });
  });
});

describe('local ingress over HTTPS: static sites', () => {
  let db: TestDatabase;
  let ingress: LocalIngress;
  let caDir: string;
  let ca: LocalCa;
  const box = new SecretBox([{ kid: 't', key: randomBytes(32) }]);
  const page = '<h1>docs</h1>';
  // the storage driver's two calls the ingress makes, over one published site (the object store itself is tested with the driver)
  const storage = {
    siteRoute: async (host: string) =>
      host === 'docs.sites.berth.localhost' ? { bucket: 'b', prefix: 'site/' } : null,
    readObject: async (_bucket: string, key: string) =>
      key === 'site/index.html'
        ? {
            body: Readable.from([Buffer.from(page)]),
            size: page.length,
            contentType: 'text/html',
            etag: null,
            lastModified: null,
          }
        : null,
  };

  beforeAll(async () => {
    db = await freshDatabase();
    caDir = await mkdtemp(path.join(tmpdir(), 'berth-ca-'));
    ca = await openLocalCa(caDir, box);
    ingress = await startLocalIngress({
      dataSource: db.ds,
      secretBox: box,
      logger: captureLogger().logger,
      events: { health: async () => undefined, liveStatus: async () => undefined, traffic: async () => undefined },
      port: 0,
      sites: { domain: 'sites.berth.localhost', storage },
      tls: { port: 0, publicPort: 8443, certificates: new IngressCertificates(db.ds, box, ca) },
    });
  });
  afterAll(async () => {
    await ingress?.close();
    await rm(caDir, { recursive: true, force: true });
    await db?.drop();
  });

  it('SIT-08 serves a site at its host over HTTPS with the local CA; plain HTTP redirects to the public HTTPS port, an unknown site does not', async () => {
    const host = 'docs.sites.berth.localhost';
    const res = await curlHttps(ingress, ca.rootPath, host);
    expect(res.status).toBe(200);
    expect(res.body).toBe(page);
    const plain = await curl(['-H', `Host: ${host}`, `${ingress.url}/`]);
    expect(plain.status).toBe(308);
    expect(plain.headers.location).toBe(`https://${host}:8443/`);
    expect((await curl(['-H', 'Host: nope.sites.berth.localhost', `${ingress.url}/`])).status).toBe(404);
  });
});
