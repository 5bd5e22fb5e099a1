import { request } from 'node:http';
import type { HealthCheck } from '../../../../entities/app';
import type { Address } from '../sandbox/launcher';
import { acceptsConnections } from './public-ports';

/** One check with every field filled (defaults: Kubernetes' own). */
export interface Probe {
  kind: 'liveness' | 'readiness' | 'startup';
  protocol: 'http' | 'tcp';
  path: string;
  /** null: the replica's own port (PORT); otherwise a fixed port at the replica's address. */
  port: number | null;
  initialDelayMs: number;
  periodMs: number;
  timeoutMs: number;
  failureThreshold: number;
}

const DEFAULTS = { initial_delay_seconds: 0, period_seconds: 10, timeout_seconds: 1, failure_threshold: 3 };

/**
 * The app's checks as probes. A check on the app's internal (web) port probes each replica
 * on its own PORT. Without a readiness check, readiness is the web port accepting
 * connections (every 2 s, 3 failures).
 */
export function probesFor(checks: Partial<HealthCheck>[] | null | undefined, webPort: number): Probe[] {
  const probes: Probe[] = (checks ?? [])
    .filter((c) => c.kind === 'liveness' || c.kind === 'readiness' || c.kind === 'startup')
    .map((c) => ({
      kind: c.kind!,
      protocol: c.protocol === 'http' ? 'http' : 'tcp',
      path: c.path || '/',
      port: c.port === undefined || c.port === null || c.port === webPort ? null : c.port,
      initialDelayMs: 1000 * (c.initial_delay_seconds ?? DEFAULTS.initial_delay_seconds),
      periodMs: 1000 * Math.max(1, c.period_seconds ?? DEFAULTS.period_seconds),
      timeoutMs: 1000 * Math.max(1, c.timeout_seconds ?? DEFAULTS.timeout_seconds),
      failureThreshold: Math.max(1, c.failure_threshold ?? DEFAULTS.failure_threshold),
    }));
  if (!probes.some((p) => p.kind === 'readiness')) {
    probes.push({
      kind: 'readiness',
      protocol: 'tcp',
      path: '/',
      port: null,
      initialDelayMs: 0,
      periodMs: 2000,
      timeoutMs: 1000,
      failureThreshold: 3,
    });
  }
  return probes;
}

function httpOk(host: string, port: number, path: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(
      {
        host,
        port,
        path,
        method: 'GET',
        timeout: timeoutMs,
        headers: { 'user-agent': 'berth-health-check' },
      },
      (res) => {
        res.resume();
        resolve((res.statusCode ?? 500) >= 200 && (res.statusCode ?? 500) < 400);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

/** Runs the probe once against a replica reached at `replica` (its address and PORT). */
export function probeOnce(probe: Probe, replica: Address): Promise<boolean> {
  const port = probe.port ?? replica.port;
  return probe.protocol === 'http'
    ? httpOk(replica.host, port, probe.path, probe.timeoutMs)
    : acceptsConnections(replica.host, port, probe.timeoutMs);
}
