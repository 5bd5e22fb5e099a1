/**
 * `npm run bench:addons`: how long the local driver takes to bring a PostgreSQL add-on
 * from create to healthy (a real cluster: initdb, start, user and database, a `pg`
 * connection) and to restore one (by backup name in place, to a point in time into a
 * new cluster). Prints p50 and p95 against the goal (create -> healthy p50 <= 10 s).
 *
 * Options (env): BENCH_N (clusters, default 5), DATABASE_URL (else an embedded PostgreSQL
 * under .berth/ for Berth's own tables).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createLocalData } from '../activities/provider/local/data';
import { detectIsolation } from '../activities/provider/local/sandbox/isolation';
import type { ClusterSpec } from '../platform/drivers/data';
import { startEmbeddedPostgres } from '../bin/embedded-postgres';
import { SecretBox } from '../domain/secret-box';
import { createDataSource, migrate } from '../entities/data-source';
import { localLayout } from '../platform/local-layout';
import { createLogger } from '../platform/logger';

const N = Number(process.env.BENCH_N ?? 5);
const GOAL_MS = 10_000;

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!;
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

function spec(): ClusterSpec {
  const name = `bench_${randomBytes(3).toString('hex')}`;
  return {
    id: `c-bench-${randomBytes(6).toString('hex')}`,
    engine: 'postgres',
    cpuSize: 1,
    ramSize: 512 * 2 ** 20,
    publicAccess: false,
    backups: false,
    password: randomBytes(18).toString('base64url'),
    username: name,
    database: name,
  };
}

async function main(): Promise<void> {
  let url = process.env.DATABASE_URL;
  let stopPg: (() => Promise<void>) | null = null;
  const dir = path.join(__dirname, '..', '.berth', `bench-addons-${process.pid}`);
  if (!url) {
    mkdirSync(dir, { recursive: true });
    const pg = await startEmbeddedPostgres({ dir: path.join(dir, 'pg'), port: await freePort(), database: 'bench' });
    stopPg = () => pg.stop();
    url = pg.url;
  }
  const ds = createDataSource({ url, poolSize: 5 });
  await ds.initialize();
  await migrate(ds);
  const base = mkdtempSync(path.join(os.tmpdir(), 'berth-bench-'));
  chmodSync(base, 0o711);
  const driver = createLocalData({
    dataSource: ds,
    secretBox: new SecretBox([{ kid: 'b', key: randomBytes(32) }]),
    isolation: detectIsolation(),
    layout: localLayout({ dataDir: path.join(base, 'berth'), appsDir: path.join(base, 'apps') }),
    logger: createLogger('warn'),
    host: '127.0.0.1',
  });
  try {
    const create: number[] = [];
    const restoreByName: number[] = [];
    const restorePitr: number[] = [];
    for (let i = 0; i < N; i++) {
      const s = spec();
      const t0 = Date.now();
      await driver.provision(s);
      const st = await driver.status(s.id);
      const c = new Client({
        host: st.endpoint!.host,
        port: st.endpoint!.port,
        user: s.username!,
        password: s.password!,
        database: s.database!,
      });
      await c.connect();
      await c.query('SELECT 1');
      create.push(Date.now() - t0);
      await c.query('CREATE TABLE t (v int); INSERT INTO t VALUES (1)');
      await c.end();
      await driver.setBackups(s.id, true);
      const [backup] = await driver.listBackups(s.id);
      const t1 = Date.now();
      await driver.restore({ sourceId: s.id, targetId: s.id, from: { backupName: backup!.name } });
      restoreByName.push(Date.now() - t1);
      const target = { ...spec(), username: s.username, database: s.database };
      const t2 = Date.now();
      await driver.restore({
        sourceId: s.id,
        targetId: target.id,
        from: { targetTime: new Date() },
        targetSpec: target,
      });
      restorePitr.push(Date.now() - t2);
      await driver.delete(target.id);
      await driver.delete(s.id);
    }
    console.log(`local postgres add-ons, ${N} runs (${os.cpus().length} cores)`);
    console.log(
      `  create -> healthy       p50 ${secs(pct(create, 50))}  p95 ${secs(pct(create, 95))}  goal p50 <= ${secs(GOAL_MS)}: ${pct(create, 50) <= GOAL_MS ? 'met' : 'MISSED'}`,
    );
    console.log(`  restore by name (place) p50 ${secs(pct(restoreByName, 50))}  p95 ${secs(pct(restoreByName, 95))}`);
    console.log(`  restore to time (new)   p50 ${secs(pct(restorePitr, 50))}  p95 ${secs(pct(restorePitr, 95))}`);
  } finally {
    await driver.close();
    await ds.destroy();
    await stopPg?.();
    rmSync(base, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
