import type { Server } from 'node:http';
import path from 'node:path';
import { DefaultLogger, Runtime as TemporalRuntime } from '@temporalio/worker';
import { syncBucketGrants } from '../activities/buckets';
import { createApp } from '../api/app';
import { migrate } from '../entities/data-source';
import type { Config } from '../platform/config';
import { createLogger } from '../platform/logger';
import type { WorkerHandle } from '../worker/main';
import { startEmbeddedObjectStore } from '../platform/object-store';
import { objectStoreFromConfig, openRuntime, type Runtime } from '../worker/runtime';
import { startSimulatedIngress } from '../activities/provider/simulated/ingress';
import { labelResourcesWithDriver, seedDefaults } from './bootstrap';
import { startConfiguredWorker } from './bundle';
import { supervise } from './lifecycle';
import { closeDataDir } from './data-dir';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from './embedded-postgres';
import { ensureMachinePackages, LOCAL_DRIVER_PACKAGES } from './machine-packages';
import { resolveTemporal } from './temporal-cli';
import { startTemporalDevServer, type TemporalDevServer } from './temporal-server';

/**
 * `berth dev` (npm start): the whole stack on one machine. Embedded PostgreSQL unless
 * DATABASE_URL is set, the Temporal CLI dev server unless TEMPORAL_ADDRESS is set, the
 * embedded object store (S3-compatible, on loopback) unless BERTH_S3_ENDPOINT is set, then
 * migrations, the worker and the API. Ctrl-C stops everything (bin/lifecycle.ts); data stays under .berth/.
 */
export async function runDev(config: Config): Promise<void> {
  const logger = createLogger(config.logLevel);
  TemporalRuntime.install({ logger: new DefaultLogger('WARN') });
  const say = (msg: string) => process.stdout.write(`${msg}\n`);
  closeDataDir(config.dataDir);
  const stops: Array<() => Promise<void>> = [];
  const stopAll = supervise({ stops, say, logger });

  try {
    // as root on Debian the local driver's isolation is installed on first start, saying so
    if (config.provider === 'local') ensureMachinePackages(LOCAL_DRIVER_PACKAGES, say);
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      say(`berth: starting embedded PostgreSQL (data in ${path.join(config.dataDir, 'postgres')})`);
      const pg: EmbeddedPostgresHandle = await startEmbeddedPostgres({
        dir: path.join(config.dataDir, 'postgres'),
        port: config.embeddedPgPort,
        database: 'berth',
        log: (m) => logger.warn(m),
        say: (m) => say(`berth: ${m}`),
      });
      stops.push(() => pg.stop());
      databaseUrl = pg.url;
    }

    let temporalAddress = config.temporalAddress;
    let uiUrl: string | null = null;
    if (!temporalAddress) {
      const executable = resolveTemporal('cli', {
        dataDir: config.dataDir,
        env: process.env,
        log: (m) => say(`berth: ${m}`),
      });
      say(
        `berth: starting the Temporal dev server (${executable.type === 'existing-path' ? executable.path : 'SDK download'})`,
      );
      const temporal: TemporalDevServer = await startTemporalDevServer({
        executable,
        port: config.temporalPort,
        uiPort: config.temporalUiPort,
        dbFilename: path.join(config.dataDir, 'temporal.db'),
        namespace: config.temporalNamespace,
      });
      stops.push(() => temporal.stop());
      temporalAddress = temporal.address;
      uiUrl = temporal.uiUrl;
    }

    let objectStore = objectStoreFromConfig(config);
    let storeSummary = `${config.s3Endpoint} (BERTH_S3_ENDPOINT)`;
    const embeddedStore = !objectStore;
    if (!objectStore) {
      const dir = path.join(config.dataDir, 'objects');
      const store = await startEmbeddedObjectStore({
        directory: dir,
        host: '127.0.0.1',
        port: config.embeddedS3Port,
        region: config.s3Region,
      });
      stops.push(() => store.close());
      objectStore = store;
      storeSummary = `${store.endpoint}   (embedded, data in ${dir})`;
    }
    const runtime: Runtime = await openRuntime({ ...config, s3Endpoint: objectStore.endpoint }, logger, {
      databaseUrl,
      temporalAddress,
      objectStore,
    });
    stops.push(() => runtime.close());
    const ran = await migrate(runtime.dataSource);
    if (ran.length > 0) say(`berth: applied migrations: ${ran.join(', ')}`);
    const seeded = await seedDefaults(runtime.dataSource, { bootstrapToken: config.bootstrapToken });
    // The embedded store's grants follow the database (a store from an older Berth knew no bucket of a key).
    if (embeddedStore) await syncBucketGrants(runtime.dataSource, runtime.apiDeps.storage!, runtime.secretBox);
    if (config.webhookAllowCidrs.length > 0) {
      logger.warn(
        { cidrs: config.webhookAllowCidrs },
        'BERTH_WEBHOOK_ALLOW_CIDRS lets webhooks reach these private ranges',
      );
    }

    const deps = await runtime.activityDeps();
    await labelResourcesWithDriver(runtime.dataSource, deps.provider.name);
    const worker: WorkerHandle = await startConfiguredWorker(runtime, config, deps, logger);
    stops.push(() => worker.shutdown());
    void worker.done.catch((err) => {
      logger.error({ err }, 'worker stopped with an error');
      void stopAll(1);
    });

    let ingressUrl: string | null = null;
    if (deps.provider.name === 'simulated' && config.simIngressPort > 0) {
      const ingress = await startSimulatedIngress({
        dataSource: runtime.dataSource,
        temporal: runtime.temporal,
        secretBox: runtime.secretBox,
        logger,
        port: config.simIngressPort,
        host: config.host,
      });
      stops.push(() => ingress.close());
      ingressUrl = ingress.url;
    }

    const app = createApp(runtime.apiDeps);
    const server: Server = await new Promise((resolve, reject) => {
      const s = app.listen(config.port, config.host, () => resolve(s));
      s.once('error', reject);
    });
    stops.push(() => new Promise<void>((resolve) => server.close(() => resolve())));

    const apiUrl = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`;
    closeDataDir(config.dataDir); // temporal.db, objects/ and local/ exist now
    say('');
    say(`  Berth API        ${apiUrl}/api/v1   (reference: ${apiUrl}/docs)`);
    if (uiUrl) say(`  Temporal UI      ${uiUrl}   (find an operation: BerthResource = "<uuid>")`);
    else say(`  Temporal         ${temporalAddress}`);
    say(`  Object store     ${storeSummary}`);
    if (ingressUrl) say(`  Apps (simulated) ${ingressUrl}   (curl -H "Host: <app name>.local" ${ingressUrl}/)`);
    say(`  Data plane       ${deps.provider.name} driver (BERTH_PROVIDER)`);
    for (const line of deps.provider.summary ?? []) say(`  ${line}`);
    say(`  Data             ${config.dataDir}${config.databaseUrl ? ' (PostgreSQL: DATABASE_URL)' : ''}`);
    say(`  Workspace        ${seeded.workspaceUuid}`);
    if (seeded.ownerToken) {
      say('');
      say('  Owner token (shown once; keep it):');
      say(`    ${seeded.ownerToken}`);
      say(`  Try: curl -H "Authorization: Bearer ${seeded.ownerToken}" ${apiUrl}/api/v1/projects`);
    }
    say('');
    say('  Ctrl-C stops everything; data is kept for the next start.');
  } catch (err) {
    logger.error({ err }, 'berth dev failed to start');
    await stopAll(1);
  }
}
