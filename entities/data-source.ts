import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { entities } from './index';
import { migrations } from './migrations';

export interface DataSourceOptions {
  url: string;
  /** Connection pool size. */
  poolSize?: number;
  logging?: boolean;
  /** How long a request waits for a pool connection before it fails (no hang while PostgreSQL is down). */
  connectTimeoutMs?: number;
}

/** The one way to make a DataSource: migrations, never synchronize. */
export function createDataSource(options: DataSourceOptions): DataSource {
  return new DataSource({
    type: 'postgres',
    url: options.url,
    entities,
    migrations,
    migrationsRun: false,
    synchronize: false,
    logging: options.logging ?? false,
    connectTimeoutMS: options.connectTimeoutMs ?? 5_000,
    extra: { max: options.poolSize ?? 10 },
  });
}

export async function migrate(ds: DataSource): Promise<string[]> {
  const ran = await ds.runMigrations({ transaction: 'each' });
  return ran.map((m) => m.name);
}
