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
 * The Go runtime's settings for every dev server Berth starts. Its live heap is bounded by the
 * caches above (57-69 MB measured at 1,500 workflows), but with Go's defaults the process holds
 * two to four times that (a heap goal of twice the live heap, freed pages returned lazily), in
 * steps of 30-50 MB that the 60-minute soak read as growth. A heap goal of 1.5 times the live
 * heap and a soft limit of 192 MiB keep it near what it uses; the limit is soft, so a server that
 * needs more gets it (Go bounds the extra collection work). An operator's own GOGC or GOMEMLIMIT
 * in Berth's environment wins.
 */
export const DEV_SERVER_GO_ENV: Readonly<Record<string, string>> = { GOGC: '50', GOMEMLIMIT: '192MiB' };

/**
 * The Temporal CLI dev server with Berth's search attributes registered. With
 * `dbFilename` its state survives restarts; without, it lives in memory (tests).
 * `dynamicConfig` replaces DEV_SERVER_DYNAMIC_CONFIG and `goEnv` DEV_SERVER_GO_ENV (the memory
 * bench compares with `{}`).
 */
export async function startTemporalDevServer(options: {
  executable: Executable;
  port?: number;
  uiPort?: number;
  dbFilename?: string;
  namespace?: string;
  dynamicConfig?: Readonly<Record<string, string | number | boolean>>;
  goEnv?: Readonly<Record<string, string>>;
}): Promise<TemporalDevServer> {
  const dynamicConfig = options.dynamicConfig ?? DEV_SERVER_DYNAMIC_CONFIG;
  const env = await withGoEnv(options.goEnv ?? DEV_SERVER_GO_ENV, () =>
    TestWorkflowEnvironment.createLocal({
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
    }),
  );
  return {
    address: env.address,
    uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : null,
    stop: () => env.teardown(),
  };
}

/**
 * Runs `start` (which spawns the server: the SDK's core starts it with this process's
 * environment and takes no environment of its own) with `vars` set where the operator has not
 * set them, and puts the environment back once it has started. Only Go programs read these.
 */
async function withGoEnv<T>(vars: Readonly<Record<string, string>>, start: () => Promise<T>): Promise<T> {
  const added = Object.keys(vars).filter((k) => process.env[k] === undefined);
  for (const k of added) process.env[k] = vars[k];
  try {
    return await start();
  } finally {
    for (const k of added) delete process.env[k];
  }
}
