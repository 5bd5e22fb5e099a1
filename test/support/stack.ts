import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { Logger } from 'pino';
import request from 'supertest';
import type { DataSource } from 'typeorm';
import type { ActivityDeps } from '../../activities';
import { createSimulatedProvider } from '../../activities/provider/simulated';
import type { ObjectStoreOptions } from '../../platform/drivers/storage';
import { createApp } from '../../api/app';
import type { ApiDeps } from '../../api/context';
import type { TokenRow } from '../../api/middleware/auth';
import { TokenCache } from '../../api/middleware/token-cache';
import { SecretBox } from '../../domain/secret-box';
import { localLayout } from '../../platform/local-layout';
import { loadConfig, type Config } from '../../platform/config';
import { createLogger } from '../../platform/logger';
import { startWorker, type WorkerHandle } from '../../worker/main';
import { Outbox } from '../../platform/outbox';
import { tallyAudit } from './audit-tally';
import { freshDatabase, type TestDatabase } from './db';
import { testEnv } from './env';

/** Every log line written during a test, to assert on (and to scan for secrets). */
export function captureLogger(level = 'debug'): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger(level, {
    write: (s: string) => {
      lines.push(s);
    },
  });
  return { logger, lines };
}

export interface TestStack {
  db: TestDatabase;
  ds: DataSource;
  config: Config;
  logger: Logger;
  logLines: string[];
  secretBox: SecretBox;
  temporal: Client;
  outbox: Outbox;
  taskQueue: string;
  apiDeps: ApiDeps;
  activityDeps: ActivityDeps;
  server: Server;
  /** Every response body the API sent (to scan for secrets). */
  responseBodies: string[];
  http: ReturnType<typeof request>;
  /** Runs a worker (the suite's workflow bundle) on this stack's task queue. */
  startWorker(options?: { activities?: Record<string, (...args: any[]) => Promise<unknown>> }): Promise<WorkerHandle>;
  close(): Promise<void>;
}

/**
 * The real stack for one test file: its own database, the suite's Temporal dev server
 * on a task queue of its own, the API served over real HTTP, logs captured.
 */
export async function startStack(
  options: { env?: NodeJS.ProcessEnv; objectStore?: ObjectStoreOptions; secretKeyring?: string } = {},
): Promise<TestStack> {
  const db = await freshDatabase();
  const taskQueue = `test-${randomBytes(6).toString('hex')}`;
  const config: Config = {
    ...loadConfig({
      BERTH_PROVIDER: 'simulated',
      BERTH_PROVIDER_LATENCY_MS: '0',
      BERTH_RATE_LIMIT: '100000/60s',
      ...options.env,
    }),
    databaseUrl: db.url,
    temporalAddress: testEnv('temporalAddress'),
    taskQueue,
    reconcileIntervalMs: 500,
  };
  const { logger, lines } = captureLogger();
  const secretBox = options.secretKeyring
    ? SecretBox.fromKeyring(options.secretKeyring)
    : new SecretBox([{ kid: 'test', key: randomBytes(32) }]);
  const connection = Connection.lazy({ address: config.temporalAddress! });
  const temporal = new Client({ connection, namespace: config.temporalNamespace });
  const outbox = new Outbox(db.ds, temporal, { taskQueue, logger });
  const provider = createSimulatedProvider({
    dataSource: db.ds,
    faultRate: 0,
    latencyMs: 0,
    objectStore: options.objectStore,
  });
  const layout = localLayout({ dataDir: mkdtempSync(path.join(tmpdir(), 'berth-data-')) });
  const tokenCache = new TokenCache<TokenRow>(db.url, logger);
  const apiDeps: ApiDeps = {
    dataSource: db.ds,
    temporal,
    outbox,
    secretBox,
    logger,
    config,
    storage: provider.storage,
    localLayout: layout,
    capabilities: {
      engine: (e) => provider.data.supports(e),
      vpcs: null,
      images: null,
      vpcAttachable: () => null,
      siteConnections: null,
    },
    tokenCache,
    validateResponses: true,
    verifyAudit: true,
    onAuditVerified: tallyAudit,
  };
  const activityDeps: ActivityDeps = { dataSource: db.ds, logger, config, secretBox, provider, temporal };
  const responseBodies: string[] = [];
  const handler = createApp(apiDeps).callback();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    const write = res.write.bind(res) as (...a: any[]) => boolean;
    const end = res.end.bind(res) as (...a: any[]) => typeof res;
    res.write = ((chunk: any, ...rest: any[]) => {
      if (chunk) chunks.push(Buffer.from(chunk));
      return write(chunk, ...rest);
    }) as typeof res.write;
    res.end = ((chunk?: any, ...rest: any[]) => {
      if (chunk && typeof chunk !== 'function') chunks.push(Buffer.from(chunk));
      responseBodies.push(Buffer.concat(chunks).toString('utf8'));
      return end(chunk, ...rest);
    }) as typeof res.end;
    void handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // Links the API shows (an app's git_url) point at this server.
  config.publicUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const workers: WorkerHandle[] = [];
  let native: NativeConnection | undefined;
  return {
    db,
    ds: db.ds,
    config,
    logger,
    logLines: lines,
    secretBox,
    temporal,
    outbox,
    taskQueue,
    apiDeps,
    activityDeps,
    server,
    responseBodies,
    http: request(server),
    async startWorker(opts = {}) {
      native ??= await NativeConnection.connect({ address: config.temporalAddress! });
      const handle = await startWorker({
        connection: native,
        namespace: config.temporalNamespace,
        taskQueue,
        deps: activityDeps,
        outbox,
        logger,
        reconcileIntervalMs: config.reconcileIntervalMs,
        workflowBundle: { codePath: testEnv('workflowBundle') },
        activities: opts.activities,
      });
      workers.push(handle);
      return handle;
    },
    async close() {
      for (const w of workers) await w.shutdown().catch(() => {});
      await native?.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await connection.close();
      await tokenCache.close();
      await db.drop();
    },
  };
}

/** Polls until `check` returns a truthy value (real time; for real-server tests). */
export async function eventually<T>(
  check: () => Promise<T | undefined | null | false>,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${options.what ?? 'condition'}`);
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 100));
  }
}

/**
 * The result of a workflow that may not have started yet (a row written by one workflow
 * before it starts the child that runs it): waits for the workflow to exist, then for its end.
 */
export async function resultOnceStarted<T = unknown>(client: Client, workflowId: string): Promise<T> {
  const handle = client.workflow.getHandle(workflowId);
  const started = () =>
    handle.describe().then(
      () => true,
      (e: unknown) => (e instanceof WorkflowNotFoundError ? false : Promise.reject(e)),
    );
  await eventually(started, { what: `workflow ${workflowId} to start` });
  return handle.result() as Promise<T>;
}

/**
 * Asserts that no response body the API sent and no log line contains any of the
 * secrets (plain values, as the client sent or received them once).
 */
export function expectNoSecretLeaks(
  stack: TestStack,
  secrets: readonly string[],
  options: { allowInResponses?: readonly string[] } = {},
): void {
  const leaks: string[] = [];
  for (const secret of secrets) {
    if (!secret || secret.length < 6) throw new Error(`secret too short to scan for: "${secret}"`);
    if (!options.allowInResponses?.includes(secret)) {
      const hit = stack.responseBodies.find((b) => b.includes(secret));
      if (hit) leaks.push(`response contains ${secret.slice(0, 4)}…: ${hit.slice(0, 200)}`);
    }
    const line = stack.logLines.find((l) => l.includes(secret));
    if (line) leaks.push(`log line contains ${secret.slice(0, 4)}…: ${line.slice(0, 200)}`);
  }
  if (leaks.length > 0) throw new Error(`secrets leaked:\n${leaks.join('\n')}`);
}
