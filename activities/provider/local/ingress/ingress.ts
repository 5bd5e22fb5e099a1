import { Agent, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Http2SecureServer } from 'node:http2';
import type { Duplex } from 'node:stream';
import { createProxyServer } from 'http-proxy-3';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { SecretBox } from '../../../../domain/secret-box';
import { BASIC_AUTH_CHALLENGE, basicAuthMatches } from '../../basic-auth';
import type { AppEventSink, Backend, IngressRoutes } from '../contracts';
import { Forwarder } from './proxy';
import { refuseUpgrade, sendText } from './pages';
import { hostOf, RouteSettingsCache, type RouteSettings } from './route-settings';
import { serveSiteObject, type SiteStorage } from './site-content';
import { serveStatic } from './static-files';
import { TtlCache } from './ttl-cache';
import {
  ACME_CHALLENGE_PATH,
  acmeAnswer,
  createHttpsListener,
  httpsLocation,
  requestAuthority,
  type IngressTls,
} from './tls/https';

export interface LocalIngressOptions {
  dataSource: DataSource;
  secretBox: SecretBox;
  logger: Logger;
  events: AppEventSink;
  port: number;
  host?: string;
  /** Traffic signals to an awake app are sent at most this often (default 60 s; keep it below the idle timeout). */
  trafficSignalIntervalMs?: number;
  /** How long routing settings read from the database are kept (default 1 s). */
  settingsTtlMs?: number;
  /** Static sites served at `<name>.<domain>` from the object store through the storage driver (absent: none). */
  sites?: { domain: string; storage: SiteStorage };
  /**
   * Public buckets' `public_endpoint` hosts (`<bucket>.storage.<region domain>`) passed to
   * the object store as they came (the embedded store lets anyone GET/HEAD a public
   * bucket's objects and refuses the rest); absent: not served.
   */
  bucketEndpoint?: string;
  /** The HTTPS listener (absent: plain HTTP only); plain HTTP to a host it has a certificate for is redirected to it. */
  tls?: IngressTls;
}

export interface LocalIngress {
  url: string;
  port: number;
  /** The HTTPS listener's URL and port (null: none). */
  tlsUrl: string | null;
  tlsPort: number | null;
  routes: IngressRoutes;
  close(): Promise<void>;
}

/** What the ingress does with one request: answer it itself, or pass it to a backend. */
type Page = { kind: 'page'; status: number; body: string; headers?: Record<string, string> };
/** A backend as the table keeps it: a process's URL is parsed once, when the driver sets it. */
type Target = { kind: 'process'; url: URL } | { kind: 'static'; root: string };
type Decision =
  | Page
  | { kind: 'backend'; appUuid: string; backend: Target }
  | { kind: 'site'; bucket: string; prefix: string }
  | { kind: 'bucket'; store: URL };

/** A bucket's public_endpoint host: `<bucket>.storage.<region domain>` (bucket names have no dots). */
const BUCKET_HOST = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]\.storage\./;

/** States in which the app is on its way up: a request waits (503 + Retry-After) rather than fails. */
const STARTING = new Set([
  'pending',
  'assigned',
  'cloning',
  'started',
  'start_scheduled',
  'restart_scheduled',
  'deploying',
]);
/** States in which nothing is served even if a replica still answers. */
const DOWN = new Set(['stopped', 'stop_scheduled', 'deleting', 'blocked']);
/** A sleeping app is woken at most this often per app (many requests may hit it at once). */
const WAKE_SIGNAL_INTERVAL_MS = 1000;
const RETRY_STARTING = { 'retry-after': '5' };

function toTarget(b: Backend): Target {
  if (b.kind === 'static') return b;
  return { kind: 'process', url: new URL(`http://${b.host.includes(':') ? `[${b.host}]` : b.host}:${b.port}`) };
}

function page(status: number, body: string, headers?: Record<string, string>): Page {
  return { kind: 'page', status, body, headers };
}

function sendPage(res: ServerResponse, d: Page): void {
  sendText(res, d.status, d.body, d.headers);
}

/**
 * The LOCAL INGRESS: one HTTP reverse proxy (http-proxy-3) in front of every app of the
 * local driver. It routes by Host (port stripped, case-insensitive) to the app whose public
 * URL host (`<name>.<region domain>`) or VERIFIED custom domain it is; the app's routing
 * settings come from the database through a short cache, its backends from the apps
 * driver (`routes.setBackends`), served round-robin. A private app is not routed (404,
 * APP-05); Basic auth guards an app that has it (401); maintenance answers 503; a sleeping
 * app is woken by its first request, which gets 503 (APP-16); every request to an awake
 * app signals traffic (throttled), which keeps a free-plan app awake (APP-15). With
 * `sites`, hosts under the sites domain serve static sites from the object store; with
 * `bucketEndpoint`, a host `<bucket>.storage.<...>` that is no app's goes to the object store.
 */
export async function startLocalIngress(options: LocalIngressOptions): Promise<LocalIngress> {
  const settings = new RouteSettingsCache(options.dataSource, options.secretBox, options.settingsTtlMs ?? 1000);
  const sites = options.sites ? { ...options.sites, domain: options.sites.domain.toLowerCase() } : null;
  const bucketStore = options.bucketEndpoint ? new URL(options.bucketEndpoint) : null;
  const siteRoutes = new TtlCache<{ bucket: string; prefix: string } | null>(options.settingsTtlMs ?? 1000);
  const interval = options.trafficSignalIntervalMs ?? 60_000;
  const tls = options.tls ?? null;
  let tlsPort: number | null = null;
  const table = new Map<string, { backends: Target[]; next: number }>();
  const lastSignal = new Map<string, number>();
  const upgraded = new Set<Duplex>();
  // HTTP requests go through undici (the hot path); WebSocket upgrades through http-proxy-3
  const forwarder = new Forwarder();
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const proxy = createProxyServer({ xfwd: true, agent, ws: true });

  const signalTraffic = (appUuid: string, every: number) => {
    const now = Date.now();
    if (now - (lastSignal.get(appUuid) ?? 0) < every) return;
    lastSignal.set(appUuid, now);
    options.events
      .traffic(appUuid)
      .catch((err: Error) =>
        options.logger.warn({ appUuid, err: err.message }, 'ingress: traffic signal not delivered'),
      );
  };

  const pick = (appUuid: string): Target | null => {
    const entry = table.get(appUuid);
    if (!entry || entry.backends.length === 0) return null;
    entry.next = (entry.next + 1) % entry.backends.length;
    return entry.backends[entry.next]!;
  };

  const route = (app: RouteSettings, authorization: string | undefined): Decision => {
    if (app.basicAuth && !basicAuthMatches(authorization, app.basicAuth.username, app.basicAuth.password)) {
      return page(401, 'authentication required', { 'www-authenticate': BASIC_AUTH_CHALLENGE });
    }
    if (app.maintenance) return page(503, 'the app is in maintenance; retry later', { 'retry-after': '60' });
    if (app.state === 'sleeping') {
      signalTraffic(app.appUuid, WAKE_SIGNAL_INTERVAL_MS);
      return page(503, 'the app is waking up; retry shortly', RETRY_STARTING);
    }
    if (DOWN.has(app.state)) return page(503, `the app is ${app.state.replace('_', ' ')}`);
    const backend = pick(app.appUuid);
    signalTraffic(app.appUuid, interval);
    if (backend) return { kind: 'backend', appUuid: app.appUuid, backend };
    return page(
      503,
      STARTING.has(app.state) ? 'the app is starting; retry shortly' : 'the app has no running instance; retry shortly',
      RETRY_STARTING,
    );
  };

  const decide = async (req: IncomingMessage): Promise<Decision> => {
    const host = hostOf(requestAuthority(req));
    if (sites && host.endsWith(`.${sites.domain}`)) {
      const site = await siteRoutes.get(host, (h) => sites.storage.siteRoute(h));
      return site ? { kind: 'site', ...site } : page(404, 'no site answers at this host');
    }
    const app = await settings.lookup(host);
    if (!app && bucketStore && BUCKET_HOST.test(host)) return { kind: 'bucket', store: bucketStore };
    if (!app || app.privateAccess) return page(404, 'no public app answers at this host');
    return route(app, req.headers.authorization);
  };

  /** The ingress is the edge: forwarding headers a client sent are dropped, then set by http-proxy-3 (xfwd). */
  const forwardable = (req: IncomingMessage) => {
    for (const name of Object.keys(req.headers)) if (name.startsWith('x-forwarded-')) delete req.headers[name];
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const d = await decide(req);
    if (d.kind === 'page') return sendPage(res, d);
    if (d.kind === 'site') return serveSiteObject(sites!.storage, d, req, res);
    if (d.kind === 'bucket')
      return forwarder.forward(req, res, d.store, (err: Error) => {
        options.logger.warn({ err: err.message }, 'ingress: the object store did not answer');
        sendPage(res, page(502, 'the object store did not answer'));
      });
    if (d.backend.kind === 'static') return serveStatic(d.backend.root, req, res);
    forwarder.forward(req, res, d.backend.url, (err: Error) => {
      options.logger.warn({ appUuid: d.appUuid, err: err.message }, 'ingress: backend did not answer');
      sendPage(res, page(502, 'the app did not answer'));
    });
  };

  const handleUpgrade = async (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const d = await decide(req);
    if (d.kind === 'page') return refuseUpgrade(socket, d.status, d.body, d.headers);
    if (d.kind === 'site' || d.kind === 'bucket' || d.backend.kind === 'static')
      return refuseUpgrade(socket, 404, 'no WebSocket here');
    forwardable(req);
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    proxy.ws(req, socket, head, { target: d.backend.url }, (err: Error) => {
      options.logger.warn({ appUuid: d.appUuid, err: err.message }, 'ingress: backend WebSocket failed');
      socket.destroy();
    });
  };

  /** Plain HTTP only: ACME's HTTP-01 answers, and a redirect to HTTPS for a public app's or a site's host the ingress has a certificate for. */
  const plainHttp = async (req: IncomingMessage): Promise<Page | null> => {
    const urlPath = req.url ?? '/';
    if (urlPath.startsWith(ACME_CHALLENGE_PATH)) {
      const answer = await acmeAnswer(options.dataSource, urlPath);
      return answer === null ? null : page(200, answer);
    }
    if (!tls) return null;
    const host = hostOf(requestAuthority(req));
    const served =
      sites && host.endsWith(`.${sites.domain}`)
        ? (await siteRoutes.get(host, (h) => sites.storage.siteRoute(h))) !== null
        : await settings.lookup(host).then((app) => app !== null && !app.privateAccess);
    if (!served || !(await tls.certificates.serves(host))) return null;
    return page(308, 'use HTTPS', { location: httpsLocation(host, urlPath, tls.publicPort ?? tlsPort ?? 443) });
  };

  const onRequest = (plain: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    const answered = plain ? plainHttp(req) : Promise.resolve(null);
    answered
      .then((p) => (p ? sendPage(res, p) : handle(req, res)))
      .catch((err: Error) => {
        options.logger.error({ err: err.message }, 'ingress error');
        if (!res.headersSent) sendPage(res, page(502, 'ingress error'));
        else res.destroy();
      });
  };
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    handleUpgrade(req, socket, head).catch((err: Error) => {
      options.logger.error({ err: err.message }, 'ingress upgrade error');
      socket.destroy();
    });
  };
  const server: Server = createServer(onRequest(true));
  server.on('upgrade', onUpgrade);
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
  proxy.on('error', (err: Error) => options.logger.warn({ err: err.message }, 'ingress: proxy error'));

  const host = options.host ?? '127.0.0.1';
  const listen = (s: Server | Http2SecureServer, p: number) =>
    new Promise<number>((resolve, reject) => {
      s.once('error', reject);
      s.listen(p, host, () => resolve((s.address() as { port: number }).port));
    });
  const port = await listen(server, options.port);
  const tlsServer = tls ? createHttpsListener(tls.certificates, onRequest(false), onUpgrade) : null;
  if (tlsServer) {
    tlsPort = await listen(tlsServer.server, tls!.port).catch(async (err: Error) => {
      await new Promise((resolve) => server.close(resolve));
      throw err;
    });
  }
  const shownHost = host.includes(':') ? `[${host}]` : host;

  const routes: IngressRoutes = {
    setBackends(appUuid, backends) {
      // the turn carries over, so a driver that sets the same replicas again does not favour the first
      table.set(appUuid, { backends: backends.map(toTarget), next: table.get(appUuid)?.next ?? -1 });
    },
    remove(appUuid) {
      table.delete(appUuid);
      lastSignal.delete(appUuid);
    },
  };

  return {
    url: `http://${shownHost}:${port}`,
    port,
    tlsUrl: tlsPort === null ? null : `https://${shownHost}:${tlsPort}`,
    tlsPort,
    routes,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      const tlsClosed = tlsServer?.close();
      server.closeAllConnections();
      for (const socket of upgraded) socket.destroy();
      agent.destroy();
      await Promise.all([closed, tlsClosed, forwarder.close()]);
    },
  };
}
