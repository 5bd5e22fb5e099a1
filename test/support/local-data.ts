import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from 'pg';
import { createLocalData, type LocalData, type LocalDataOptions } from '../../activities/provider/local/data';
import { detectIsolation } from '../../activities/provider/local/sandbox/isolation';
import type { ClusterSpec } from '../../platform/drivers/data';
import { SecretBox } from '../../domain/secret-box';
import { localLayout } from '../../platform/local-layout';
import { captureLogger } from './stack';
import { freshDatabase, type TestDatabase } from './db';

export interface LocalDataHarness {
  db: TestDatabase;
  driver: LocalData;
  logLines: string[];
  /** A second driver on the same database and folders (Berth started again); the harness closes it too. */
  reopen(): LocalData;
  close(): Promise<void>;
}

/**
 * The local data driver on a database of its own, its folders in a temp dir (the apps
 * root 0711 outside the 0700 data dir, as when Berth is root), the configured host
 * 127.0.0.2 (where publicly accessible databases listen too): real servers.
 */
export async function localDataHarness(
  options: { binaries?: LocalDataOptions['binaries']; db?: TestDatabase } = {},
): Promise<LocalDataHarness> {
  const { binaries } = options;
  const db = options.db ?? (await freshDatabase());
  const base = mkdtempSync(path.join(os.tmpdir(), 'berth-data-'));
  chmodSync(base, 0o711);
  const layout = localLayout({ dataDir: path.join(base, 'berth'), appsDir: path.join(base, 'apps') });
  const { logger, lines } = captureLogger();
  const secretBox = new SecretBox([{ kid: 't', key: randomBytes(32) }]);
  const make = () =>
    createLocalData({
      dataSource: db.ds,
      secretBox,
      layout,
      isolation: detectIsolation(),
      logger,
      host: '127.0.0.2',
      binaries,
    });
  const driver = make();
  const reopened: LocalData[] = [];
  return {
    db,
    driver,
    logLines: lines,
    reopen() {
      const d = make();
      reopened.push(d);
      return d;
    },
    async close() {
      for (const d of reopened) await d.close();
      await driver.close();
      if (!options.db) await db.drop();
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/** A cluster spec as the activities build it (generated user, database and password). */
export function specFor(engine: ClusterSpec['engine'], extra: Partial<ClusterSpec> = {}): ClusterSpec {
  const name = `db_${randomBytes(4).toString('hex')}`;
  return {
    id: `c-${randomBytes(8).toString('hex')}`,
    engine,
    cpuSize: 1,
    ramSize: 512 * 2 ** 20,
    publicAccess: false,
    backups: false,
    password: randomBytes(24).toString('base64url'),
    username: engine === 'valkey' ? 'default' : name,
    database: engine === 'valkey' ? null : name,
    ...extra,
  };
}

/**
 * The pid of the PostgreSQL server (the postmaster) a connected client talks to: the
 * parent of its backend process, read in /proc (what an operator finds with ps).
 */
export async function postmasterPid(c: Client): Promise<number> {
  const backend = (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
  const ppid = Number(/^PPid:\s+(\d+)/m.exec(readFileSync(`/proc/${backend}/status`, 'utf8'))?.[1]);
  if (!/postgres/.test(readFileSync(`/proc/${ppid}/cmdline`, 'utf8')))
    throw new Error(`the parent ${ppid} of backend ${backend} is not a postgres server`);
  return ppid;
}
