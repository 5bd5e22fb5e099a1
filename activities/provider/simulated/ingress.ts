import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { APP_LIVE_STATES, HEALTH_EVENTS, type HealthEvent, type LiveStatus } from '../../../domain/apps';
import type { SecretBox } from '../../../domain/secret-box';
import { one } from '../../../entities/sql';
import { BASIC_AUTH_CHALLENGE, basicAuthMatches } from '../basic-auth';
import { SimulatedAppsControl } from './apps';
import type { AppRouteRow } from '../local/ingress/route-settings';

export interface SimulatedIngressOptions {
  dataSource: DataSource;
  temporal: Client;
  secretBox: SecretBox;
  logger: Logger;
  port: number;
  host?: string;
  /** Traffic signals to an awake app are sent at most this often (the idle timer needs no more). */
  trafficSignalIntervalMs?: number;
}

export interface SimulatedIngress {
  url: string;
  port: number;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'x-berth-simulated': 'ingress', ...headers });
  res.end(`${body}\n`);
}

async function readJson(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
  } catch {
    return null;
  }
}

/**
 * The SIMULATED INGRESS: an HTTP server standing in for the cluster's load balancer, so
 * traffic can reach simulated apps. It routes by Host (the first label is the app's name,
 * e.g. `web-k3x9q2.local.berth.localhost`): a private app is unreachable (404), a
 * sleeping app answers 503 and is woken, an app that is starting answers 503, a running
 * one answers 200 (after HTTP Basic Auth when enabled). Every request to an app signals
 * its workflow (throttled), which is what keeps a free-plan app awake.
 *
 * Operators and tests report health and live status under `/__simulated/` (any Host):
 *   POST /__simulated/apps/<uuid>/health  {"event": "app_crash_loop", "detail": "..."}
 *   POST /__simulated/apps/<uuid>/status  {"status": "problem"}
 */
export async function startSimulatedIngress(options: SimulatedIngressOptions): Promise<SimulatedIngress> {
  const control = new SimulatedAppsControl(options.dataSource, options.temporal);
  const lastSignal = new Map<string, number>();
  const interval = options.trafficSignalIntervalMs ?? 60_000;

  const signalTraffic = async (appUuid: string, force: boolean) => {
    const now = Date.now();
    if (!force && now - (lastSignal.get(appUuid) ?? 0) < interval) return;
    lastSignal.set(appUuid, now);
    await control
      .traffic(appUuid)
      .catch((err: Error) =>
        options.logger.warn({ appUuid, err: err.message }, 'simulated ingress: traffic signal not delivered'),
      );
  };

  const controlRequest = async (req: IncomingMessage, res: ServerResponse, path: string) => {
    const m = /^\/__simulated\/apps\/([0-9a-f-]{36})\/(health|status)$/.exec(path);
    if (!m || req.method !== 'POST') return send(res, 404, 'simulated ingress: unknown control path');
    const body = await readJson(req);
    if (!body) return send(res, 400, 'body must be JSON');
    const [, appUuid, kind] = m as unknown as [string, string, string];
    const exists = await one(options.dataSource, `SELECT 1 FROM apps WHERE uuid = $1`, [appUuid]);
    if (!exists) return send(res, 404, 'no such app');
    if (kind === 'health') {
      if (!(HEALTH_EVENTS as readonly string[]).includes(body.event))
        return send(res, 400, `event must be one of ${HEALTH_EVENTS.join(', ')}`);
      await control.health(
        appUuid,
        body.event as HealthEvent,
        typeof body.detail === 'string' ? body.detail : undefined,
      );
    } else {
      if (!(APP_LIVE_STATES as readonly string[]).includes(body.status))
        return send(res, 400, `status must be one of ${APP_LIVE_STATES.join(', ')}`);
      await control.liveStatus(appUuid, body.status as LiveStatus);
    }
    return send(res, 202, 'reported');
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path.startsWith('/__simulated/')) return controlRequest(req, res, path);
    const name = (req.headers.host ?? '').split(':')[0]!.split('.')[0]!.toLowerCase();
    const app = name
      ? await one<AppRouteRow>(
          options.dataSource,
          `SELECT uuid, state, private_access, maintenance, basic_auth_enabled, basic_auth_username, basic_auth_password_sealed FROM apps WHERE name = $1`,
          [name],
        )
      : undefined;
    if (!app || app.private_access) return send(res, 404, 'no public app answers at this host');
    if (app.basic_auth_enabled) {
      const ok =
        app.basic_auth_username &&
        app.basic_auth_password_sealed &&
        basicAuthMatches(
          req.headers.authorization,
          app.basic_auth_username,
          options.secretBox.open(app.basic_auth_password_sealed),
        );
      if (!ok) return send(res, 401, 'authentication required', { 'www-authenticate': BASIC_AUTH_CHALLENGE });
    }
    if (app.state === 'sleeping') {
      await signalTraffic(app.uuid, true);
      return send(res, 503, 'the app is waking up; retry shortly', { 'retry-after': '5' });
    }
    if (
      app.state === 'started' ||
      app.state === 'start_scheduled' ||
      app.state === 'restart_scheduled' ||
      app.state === 'deploying'
    ) {
      await signalTraffic(app.uuid, false);
      return send(res, 503, 'the app is starting; retry shortly', { 'retry-after': '5' });
    }
    if (app.maintenance) return send(res, 503, 'the app is in maintenance', { 'retry-after': '60' });
    if (app.state === 'running' || app.state === 'problem') {
      await signalTraffic(app.uuid, false);
      return send(res, 200, `simulated app ${name}`);
    }
    return send(res, 503, `the app is ${app.state}`);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: Error) => {
      options.logger.error({ err: err.message }, 'simulated ingress error');
      if (!res.headersSent) send(res, 502, 'simulated ingress error');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
