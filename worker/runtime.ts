import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { ActivityDeps } from '../activities';
import type { Provider } from '../activities/provider/provider';
import { createSimulatedProvider } from '../activities/provider/simulated';
import { createObjectStoreStorage } from '../activities/provider/object-store-storage';
import type { ObjectStoreOptions } from '../platform/drivers/storage';
import { localLayoutFor, startLocalProvider } from '../activities/provider/local';
import { localCapabilities } from '../activities/provider/local/capabilities';
import { simulatedCapabilities } from '../activities/provider/simulated/capabilities';
import type { ApiDeps } from '../api/context';
import type { TokenRow } from '../api/middleware/auth';
import { TokenCache } from '../api/middleware/token-cache';
import { SecretBox } from '../domain/secret-box';
import { createDataSource } from '../entities/data-source';
import type { Config } from '../platform/config';
import { Outbox } from '../platform/outbox';

/** The secret keyring: BERTH_SECRET_KEY, or a key generated once under the data directory. */
export function loadSecretBox(config: Config, logger: Logger): SecretBox {
  if (config.secretKey) return SecretBox.fromKeyring(config.secretKey);
  const file = path.join(config.dataDir, 'secret.key');
  if (!existsSync(file)) {
    mkdirSync(config.dataDir, { recursive: true });
    writeFileSync(file, `k1:${SecretBox.generateKey()}\n`, { mode: 0o600 });
    logger.warn({ file }, 'generated a secret key for encryption at rest; set BERTH_SECRET_KEY in production');
  }
  return SecretBox.fromKeyring(readFileSync(file, 'utf8').trim());
}

/** The object store of BERTH_S3_ENDPOINT, if configured. */
export function objectStoreFromConfig(config: Config): ObjectStoreOptions | undefined {
  if (!config.s3Endpoint) return undefined;
  if (!config.s3AccessKey || !config.s3SecretKey)
    throw new Error('BERTH_S3_ENDPOINT needs BERTH_S3_ACCESS_KEY and BERTH_S3_SECRET_KEY');
  return {
    endpoint: config.s3Endpoint,
    region: config.s3Region,
    accessKeyId: config.s3AccessKey,
    secretAccessKey: config.s3SecretKey,
  };
}

export interface Runtime {
  config: Config;
  logger: Logger;
  dataSource: DataSource;
  secretBox: SecretBox;
  temporal: Client;
  outbox: Outbox;
  apiDeps: ApiDeps;
  /**
   * Starts the data-plane driver (once) and answers what activities are built from. Only
   * processes that run a worker call it: the local driver runs app processes, the ingress
   * and add-on servers in the process that starts it.
   */
  activityDeps(): Promise<ActivityDeps>;
  /** Opens a worker connection (only processes that run a worker need one). */
  nativeConnection(): Promise<NativeConnection>;
  close(): Promise<void>;
}

/** Builds every long-lived dependency from configuration and resolved addresses. */
export async function openRuntime(
  config: Config,
  logger: Logger,
  addresses: { databaseUrl: string; temporalAddress: string; objectStore?: ObjectStoreOptions },
): Promise<Runtime> {
  const dataSource = createDataSource({ url: addresses.databaseUrl });
  await dataSource.initialize();
  const secretBox = loadSecretBox(config, logger);
  const connection = Connection.lazy({ address: addresses.temporalAddress });
  const temporal = new Client({ connection, namespace: config.temporalNamespace });
  const outbox = new Outbox(dataSource, temporal, { taskQueue: config.taskQueue, logger });
  // its LISTEN connection opens on the first API request, so a worker process has none
  const tokenCache = new TokenCache<TokenRow>(addresses.databaseUrl, logger);
  const objectStore = addresses.objectStore ?? objectStoreFromConfig(config);
  const simulated = () =>
    createSimulatedProvider({
      dataSource,
      faultRate: config.providerFaultRate,
      latencyMs: config.providerLatencyMs,
      objectStore,
    });
  // The API reaches the object store directly (bucket objects, download links); it starts no data plane.
  const storage = createObjectStoreStorage({ db: dataSource, store: objectStore });
  let native: NativeConnection | undefined;
  let provider: Promise<Provider> | undefined;
  const startProvider = (): Promise<Provider> => {
    provider ??=
      config.provider === 'local'
        ? startLocalProvider({ config, dataSource, secretBox, temporal, logger, objectStore })
        : Promise.resolve(simulated());
    return provider;
  };
  return {
    config,
    logger,
    dataSource,
    secretBox,
    temporal,
    outbox,
    async activityDeps() {
      return { dataSource, logger, config, secretBox, provider: await startProvider(), temporal };
    },
    apiDeps: {
      dataSource,
      temporal,
      outbox,
      secretBox,
      logger,
      config,
      storage,
      tokenCache,
      // the API reads build and app logs and serves git repositories where the local driver keeps them
      localLayout:
        config.provider === 'local' ? localLayoutFor(config, { uidSwitch: process.getuid?.() === 0 }) : undefined,
      // what the data plane does for real: what it cannot is refused at create (422)
      capabilities: config.provider === 'local' ? localCapabilities(config) : simulatedCapabilities,
    },
    async nativeConnection() {
      native ??= await NativeConnection.connect({ address: addresses.temporalAddress });
      return native;
    },
    async close() {
      // a data plane that failed to start has nothing to stop
      const started = await provider?.catch(() => undefined);
      await started?.close?.();
      await native?.close();
      await connection.close();
      await tokenCache.close();
      await dataSource.destroy();
    },
  };
}
