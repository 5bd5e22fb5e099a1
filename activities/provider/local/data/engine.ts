import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import type { ClusterSpec } from '../../../../platform/drivers/data';
import type { Isolation } from '../sandbox/isolation';
import type { ClusterRow, ClusterSecrets, ClusterStore } from './store';
import { LOOPBACK, workloadHost } from '../sandbox/launcher';
import { clusterOwner } from './commands';

/** What every engine's server code gets. */
export interface EngineContext {
  store: ClusterStore;
  iso: Isolation;
  logger: Logger;
  /** Where servers listen beyond loopback when publicly accessible (the configured host). */
  host: string;
  /** `<dataRoot>/<cluster id>`: the cluster's own folder (0700, its uid). */
  dir(id: string): string;
}

/** One kind of database server (postgres, valkey, mysql) run as a local process. */
export interface Engine {
  /** Creates the data directory and the configuration (idempotent), and the users once it runs. */
  init(row: ClusterRow, spec: ClusterSpec): Promise<void>;
  /** Creates the generated user and database on a running server (idempotent). */
  setup(row: ClusterRow, spec: ClusterSpec): Promise<void>;
  /** Rewrites the configuration from the row (port, listen address, archiving). */
  configure(row: ClusterRow): Promise<void>;
  start(row: ClusterRow): Promise<void>;
  stop(row: ClusterRow): Promise<void>;
  /** The server process is alive (its pid file names a live process). */
  alive(row: ClusterRow): boolean;
  /** A real check: a connection and a trivial query. */
  check(row: ClusterRow): Promise<boolean>;
  /** Drops every piece of data, keeping the server and its generated user. */
  reset(row: ClusterRow): Promise<void>;
}

/**
 * Where a server listens: its workload address (Berth's own connections), the workload
 * network's gateway when there is one (the apps it is attached to; the policy lets no one
 * else through), and when publicly accessible also the configured host
 * (every interface when that is a wildcard or a name; loopback alone when it is loopback:
 * the operator keeps the whole platform on this machine).
 */
export function listenAddresses(clusterId: string, publicAccess: boolean, host: string, gateway?: string): string[] {
  const own = [workloadHost(clusterOwner(clusterId)), ...(gateway ? [gateway] : [])];
  if (!publicAccess || host === LOOPBACK || host === 'localhost' || host === '::1') return own;
  if (host === '0.0.0.0' || host === '::' || isIP(host) === 0) return ['0.0.0.0'];
  return [...own, host];
}

/** The public host of the endpoint: the configured host, or loopback when that is a wildcard. */
export function publicHost(host: string): string {
  return host === '0.0.0.0' || host === '::' ? LOOPBACK : host;
}

/** The pid in the first line of `pidFile` (null when there is none). */
export function pidOf(pidFile: string): number | null {
  try {
    const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]!.trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/**
 * Whether a process is alive. A killed server is a zombie until its parent reaps it, and
 * a daemonized server's parent is init, which in some containers never reaps: a zombie
 * answers signal 0 like a live process, so its state in /proc decides.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) S ..."; comm may hold spaces and parentheses
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc: signal 0 is the answer
  }
}

/** Whether the pid in the first line of `pidFile` is a live process (not a zombie). */
export function pidAlive(pidFile: string): number | null {
  const pid = pidOf(pidFile);
  return pid !== null && processAlive(pid) ? pid : null;
}

export const logTail = (file: string) => {
  try {
    const lines = readFileSync(file, 'utf8').trim().split('\n').slice(-40);
    const bad = lines.filter((l) => /FATAL|PANIC|ERROR/.test(l)).slice(-3);
    return [...bad, lines[lines.length - 1]].join(' | ');
  } catch {
    return '';
  }
};

export const secretsOf = (ctx: EngineContext, row: ClusterRow): ClusterSecrets => ctx.store.secrets(row);
export const serverLog = (ctx: EngineContext, id: string) => path.join(ctx.dir(id), 'server.log');
