import { TestWorkflowEnvironment } from '@temporalio/testing';
import { SEARCH_ATTRIBUTES } from '../domain/search-attributes';
import type { Executable } from './temporal-cli';

export interface TemporalDevServer {
  address: string;
  uiUrl: string | null;
  stop(): Promise<void>;
}

/**
 * Dynamic config every dev server Berth starts gets (`npm start`, the chaos runs, the test
 * suite), for the Temporal CLI 1.9.1 (Server 1.32). Measured by `npm run bench:temporal-memory`;
 * see docs/reliability.md.
 */
export const DEV_SERVER_DYNAMIC_CONFIG: Readonly<Record<string, string | number | boolean>> = {
  // The history service's cache of workflow mutable state (one host-level LRU). Its default
  // bound is 128,000 entries, and its 1-hour TTL is only checked when an entry is read
  // again (background eviction is off), so every workflow run stays cached: the server grows
  // with every workflow run (about two entries, 0.05 MB, per workflow). 1,000 entries is far more
  // than the workflows a single machine has in flight at once (an entry in use cannot be
  // evicted; a full cache of them refuses work), and a miss costs one read from SQLite.
  'history.hostLevelCacheMaxSize': 1000,
  // Every history write also puts its events in a cache kept for replication to another
  // cluster (8 MB of serialized events by default), which a single dev server never reads:
  // its minimum, 64 KB. Measured: about 5 MB less live heap once it would have filled.
  'history.xdcCacheMaxSizeBytes': 65536,
};

/**
 * The Temporal CLI dev server with Berth's search attributes registered. With
 * `dbFilename` its state survives restarts; without, it lives in memory (tests).
 * `dynamicConfig` replaces DEV_SERVER_DYNAMIC_CONFIG (the memory bench compares with `{}`).
 */
export async function startTemporalDevServer(options: {
  executable: Executable;
  port?: number;
  uiPort?: number;
  dbFilename?: string;
  namespace?: string;
  dynamicConfig?: Readonly<Record<string, string | number | boolean>>;
}): Promise<TemporalDevServer> {
  const dynamicConfig = options.dynamicConfig ?? DEV_SERVER_DYNAMIC_CONFIG;
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: options.executable,
      ip: '127.0.0.1',
      port: options.port,
      ...(options.uiPort ? { ui: true, uiPort: options.uiPort } : { ui: false }),
      dbFilename: options.dbFilename,
      namespace: options.namespace ?? 'default',
      searchAttributes: SEARCH_ATTRIBUTES,
      log: { format: 'pretty', level: 'error' },
      extraArgs: Object.entries(dynamicConfig).flatMap(([key, value]) => [
        '--dynamic-config-value',
        `${key}=${JSON.stringify(value)}`,
      ]),
    },
  });
  return {
    address: env.address,
    uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : null,
    stop: () => env.teardown(),
  };
}
