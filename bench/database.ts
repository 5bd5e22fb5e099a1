import { mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { DEFAULT_PLAN } from '../bin/bootstrap';
import { startEmbeddedPostgres } from '../bin/embedded-postgres';
import { createDataSource, migrate } from '../entities/data-source';

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** A migrated database for a benchmark: DATABASE_URL, else an embedded PostgreSQL under .berth/ removed by `stop`. */
export async function benchDatabase(): Promise<{ ds: DataSource; url: string; stop(): Promise<void> }> {
  let dir: string | null = null;
  let stopPg: (() => Promise<void>) | null = null;
  let url = process.env.DATABASE_URL;
  if (!url) {
    // under .berth/ like the test stack (the embedded cluster's user must reach it)
    dir = path.join(__dirname, '..', '.berth', `bench-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    const pg = await startEmbeddedPostgres({ dir: path.join(dir, 'pg'), port: await freePort(), database: 'bench' });
    stopPg = () => pg.stop();
    url = pg.url;
  }
  const ds = createDataSource({ url, poolSize: 10 });
  await ds.initialize();
  await migrate(ds);
  return {
    ds,
    url,
    async stop() {
      await ds.destroy();
      await stopPg?.();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A region of its own and an 8-CPU, 16 GiB compute resource in it for workspace `ws`; its uuid. */
export async function benchResource(m: EntityManager, ws: string): Promise<string> {
  const [region] = await m.query(
    `INSERT INTO regions (name, code, domain) VALUES ('Bench', $1, 'bench.localhost') RETURNING id`,
    [`bench-${randomUUID().slice(0, 6)}`],
  );
  const resource = randomUUID();
  await m.query(
    `INSERT INTO compute_resources (uuid, workspace_uuid, region_id, name, total_cpu_size, total_ram_size, total_disk_size, plan)
                 VALUES ($1, $2, $3, 'bench', 8, $4, $5, $6)`,
    [resource, ws, region.id, 16 * 2 ** 30, 100 * 2 ** 30, JSON.stringify(DEFAULT_PLAN)],
  );
  return resource;
}
