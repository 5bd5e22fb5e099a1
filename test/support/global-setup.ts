import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Runtime, DefaultLogger } from '@temporalio/worker';
import { bundleWorkflowCode } from '@temporalio/worker';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../../bin/embedded-postgres';
import { resolveTemporal } from '../../bin/temporal-cli';
import { startTemporalDevServer } from '../../bin/temporal-server';
import { createDataSource, migrate } from '../../entities/data-source';
import { WORKFLOWS_PATH } from '../../worker/main';
import { TEST_DATA_DIR, TEST_ENV, TOOLS_DATA_DIR } from './env';
import { freePort } from './ports';

/**
 * Starts what the suite needs, once: PostgreSQL (BERTH_TEST_DATABASE_URL, or an embedded
 * cluster), a migrated template database each test file copies, the Temporal dev server
 * (in memory, Berth's search attributes registered), the time-skipping test server's
 * binary, and one workflow bundle every test worker reuses.
 */
export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  const log = (m: string) => process.stderr.write(`[test setup] ${m}\n`);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const runDir = path.join(TEST_DATA_DIR, `run-${process.pid}`);
  mkdirSync(runDir, { recursive: true });
  const auditTally = path.join(runDir, 'audit-tally');
  mkdirSync(auditTally, { recursive: true });
  process.env[TEST_ENV.auditTally] = auditTally;
  const stops: Array<() => Promise<void>> = [];
  (globalThis as Record<string, unknown>).__berthTestStops = stops;
  (globalThis as Record<string, unknown>).__berthTestRunDir = runDir;

  const cli = resolveTemporal('cli', { dataDir: TOOLS_DATA_DIR, log });
  const testServer = resolveTemporal('test-server', { dataDir: TOOLS_DATA_DIR, log });
  if (testServer.type === 'existing-path') process.env[TEST_ENV.testServer] = testServer.path;
  if (cli.type === 'existing-path') process.env[TEST_ENV.cli] = cli.path;

  const postgres = (async () => {
    let adminUrl = process.env.BERTH_TEST_DATABASE_URL;
    if (!adminUrl) {
      const pg = await startEmbeddedPostgres({
        dir: path.join(runDir, 'postgres'),
        port: await freePort(),
        database: 'berth_test',
      });
      stops.push(async () => {
        await pg.stop();
      });
      adminUrl = pg.url;
    }
    const template = `berth_template_${process.pid}`;
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${template}`);
    await admin.query(`CREATE DATABASE ${template}`);
    await admin.end();
    const url = new URL(adminUrl);
    url.pathname = `/${template}`;
    const ds = createDataSource({ url: url.toString(), poolSize: 1 });
    await ds.initialize();
    await migrate(ds);
    await ds.destroy();
    stops.push(async () => {
      const c = new Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${template}`).catch(() => {});
      await c.end();
    });
    process.env[TEST_ENV.pgAdminUrl] = adminUrl;
    process.env[TEST_ENV.templateDb] = template;
  })();

  const temporal = (async () => {
    const server = await startTemporalDevServer({ executable: cli });
    stops.push(() => server.stop());
    process.env[TEST_ENV.temporalAddress] = server.address;
  })();

  const bundle = (async () => {
    const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
    const codePath = path.join(runDir, 'workflow-bundle.js');
    writeFileSync(codePath, code);
    process.env[TEST_ENV.workflowBundle] = codePath;
  })();

  const results = await Promise.allSettled([postgres, temporal, bundle]);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    rmSync(runDir, { recursive: true, force: true });
    throw failed.reason;
  }
  log(`stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
