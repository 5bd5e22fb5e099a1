import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createApp } from '../api/app';
import { createDataSource, migrate } from '../entities/data-source';
import type { Config } from '../platform/config';
import { createLogger } from '../platform/logger';
import { openRuntime } from '../worker/runtime';
import { labelResourcesWithDriver, seedDefaults } from './bootstrap';
import { startConfiguredWorker } from './bundle';

function required(config: Config): { databaseUrl: string; temporalAddress: string } {
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required (use `berth dev` for the embedded stack)');
  if (!config.temporalAddress) throw new Error('TEMPORAL_ADDRESS is required (use `berth dev` for the embedded stack)');
  return { databaseUrl: config.databaseUrl, temporalAddress: config.temporalAddress };
}

function onSignal(stop: () => Promise<void>): void {
  let stopping = false;
  const handler = () => {
    if (stopping) return;
    stopping = true;
    stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', handler);
  process.once('SIGTERM', handler);
}

/** `berth api`: the API server alone. */
export async function runApi(config: Config): Promise<void> {
  const logger = createLogger(config.logLevel);
  const runtime = await openRuntime(config, logger, required(config));
  const server = createApp(runtime.apiDeps).listen(config.port, config.host, () => {
    logger.info({ host: config.host, port: config.port }, 'berth api listening');
  });
  onSignal(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await runtime.close();
  });
}

/** `berth worker`: one worker and its outbox reconciler; run several to scale out. */
export async function runWorkerProcess(config: Config): Promise<void> {
  const logger = createLogger(config.logLevel);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const runtime = await openRuntime(config, logger, required(config));
  const deps = await runtime.activityDeps();
  await labelResourcesWithDriver(runtime.dataSource, deps.provider.name);
  logger.info({ driver: deps.provider.name, summary: deps.provider.summary }, 'data plane started');
  const handle = await startConfiguredWorker(runtime, config, deps, logger);
  logger.info({ taskQueue: config.taskQueue }, 'berth worker running');
  onSignal(async () => {
    await handle.shutdown();
    await runtime.close();
  });
  await handle.done;
}

/** `berth migrate`: applies pending migrations. */
export async function runMigrate(config: Config): Promise<void> {
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required');
  const ds = createDataSource({ url: config.databaseUrl });
  await ds.initialize();
  try {
    const ran = await migrate(ds);
    process.stdout.write(ran.length ? `applied: ${ran.join(', ')}\n` : 'nothing to apply\n');
    const seeded = await seedDefaults(ds, { bootstrapToken: config.bootstrapToken });
    if (seeded.ownerToken) {
      process.stdout.write(
        `created the default workspace ${seeded.workspaceUuid}; owner token (shown once):\n${seeded.ownerToken}\n`,
      );
    }
  } finally {
    await ds.destroy();
  }
}
