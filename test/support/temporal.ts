import { randomBytes } from 'node:crypto';
import type { Client, ConnectionOptions, ConnectionPlugin } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { SEARCH_ATTRIBUTES } from '../../domain/search-attributes';
import { createActivities, type ActivityDeps } from '../../activities';
import { Outbox } from '../../platform/outbox';
import { testEnv } from './env';

export interface TimeSkipping {
  env: TestWorkflowEnvironment;
  client: Client;
  taskQueue: string;
  /** An outbox that starts workflows on this server and task queue. */
  outbox: Outbox;
  /**
   * Runs `fn` while a worker (the suite's bundle, the real activities built from `deps`,
   * plus any overrides) polls this task queue. Time skips while the test awaits results.
   */
  withWorker<T>(fn: () => Promise<T>, activities?: Record<string, (...args: any[]) => Promise<unknown>>): Promise<T>;
  close(): Promise<void>;
}

/**
 * The client's default keepalive pings every 30 s; the test server (Java gRPC) answers
 * pings more frequent than every 5 minutes with GOAWAY "excess pings", which stalls calls
 * in flight (a long test on a loaded machine hangs in env.sleep). Ping every 10 minutes.
 */
const GENTLE_KEEPALIVE: ConnectionPlugin = {
  name: 'gentle-keepalive',
  configureConnection: (options: ConnectionOptions) => ({
    ...options,
    channelArgs: {
      ...options.channelArgs,
      'grpc.keepalive_time_ms': 600_000,
      'grpc.keepalive_permit_without_calls': 0,
    },
  }),
};

/**
 * The SDK gives the test server 5 s to start; on a loaded 2-core machine the JVM can take
 * longer, so a start that times out is tried again.
 */
async function startTimeSkippingServer(attempts = 3): Promise<TestWorkflowEnvironment> {
  for (let i = 1; ; i++) {
    try {
      return await TestWorkflowEnvironment.createTimeSkipping({
        server: { executable: { type: 'existing-path', path: testEnv('testServer') } },
        plugins: [GENTLE_KEEPALIVE],
      });
    } catch (err) {
      if (i >= attempts || !/did not start/.test(String(err))) throw err;
    }
  }
}

/** The time-skipping test server (binary resolved by the shared resolver) for workflow tests. */
export async function timeSkipping(deps: ActivityDeps): Promise<TimeSkipping> {
  const env = await startTimeSkippingServer();
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(
      SEARCH_ATTRIBUTES.map((k) => [k.name, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
    ),
  });
  const taskQueue = `ts-${randomBytes(6).toString('hex')}`;
  const outbox = new Outbox(deps.dataSource, env.client, { taskQueue, logger: deps.logger });
  return {
    env,
    client: env.client,
    taskQueue,
    outbox,
    async withWorker(fn, activities) {
      const worker = await Worker.create({
        connection: env.nativeConnection,
        taskQueue,
        workflowBundle: { codePath: testEnv('workflowBundle') },
        activities: { ...createActivities({ ...deps, temporal: env.client }), ...activities },
      });
      return worker.runUntil(fn());
    },
    close: () => env.teardown(),
  };
}
