import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { createDataSource } from '../../entities/data-source';
import { testEnv } from './env';

export interface TestDatabase {
  ds: DataSource;
  url: string;
  name: string;
  drop(): Promise<void>;
}

async function admin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: testEnv('pgAdminUrl') });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A database of its own for one test file, copied from the migrated template. */
export async function freshDatabase(): Promise<TestDatabase> {
  const name = `berth_t_${randomBytes(6).toString('hex')}`;
  const template = testEnv('templateDb');
  await admin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
  const url = new URL(testEnv('pgAdminUrl'));
  url.pathname = `/${name}`;
  const ds = createDataSource({ url: url.toString(), poolSize: 10 });
  await ds.initialize();
  return {
    ds,
    url: url.toString(),
    name,
    async drop() {
      if (ds.isInitialized) await ds.destroy();
      await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

/** Row counts of every table, to prove a request wrote nothing. */
export async function tableCounts(ds: DataSource): Promise<Record<string, number>> {
  const tables: Array<{ tablename: string }> = await ds.query(
    `SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename NOT IN ('migrations', 'typeorm_metadata')`,
  );
  const counts: Record<string, number> = {};
  for (const { tablename } of tables) {
    const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM "${tablename}"`);
    counts[tablename] = n;
  }
  return counts;
}
