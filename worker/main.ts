import { Client } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createActivities, type ActivityDeps } from '../activities';
import type { Outbox } from '../platform/outbox';

/** The workflows' entry: index.ts run through tsx, index.js in the compiled build (`npm run build`). */
export const WORKFLOWS_PATH = require.resolve('../workflows');

export interface WorkerHandle {
  worker: Worker;
  /** Resolves when the worker has stopped. */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

export interface StartWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  outbox: Outbox;
  logger: Logger;
  reconcileIntervalMs: number;
  /** A prebuilt bundle (bin/ builds one in a child process; tests one per run); otherwise workflows/ is bundled here. */
  workflowBundle?: { codePath: string };
  /** The sticky cache's size (Config.workerCachedWorkflows); unset: the SDK's default, which grows with the heap. */
  cachedWorkflows?: number;
  /** Extra or replacement activities (tests). */
  activities?: Record<string, (...args: any[]) => Promise<unknown>>;
  workerOptions?: Partial<WorkerOptions>;
}

/**
 * Starts a worker on the task queue and the outbox reconciler beside it, which starts any
 * workflow whose entity was committed but whose start never happened.
 */
export async function startWorker(options: StartWorkerOptions): Promise<WorkerHandle> {
  // Activities start workflows over the worker's own connection: a start on this task queue
  // (a webhook delivery) can then be eager, its first workflow task handed straight to this worker.
  const temporal = new Client({ connection: options.connection, namespace: options.namespace });
  const worker = await Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    activities: { ...createActivities({ ...options.deps, temporal }), ...options.activities },
    ...(options.cachedWorkflows === undefined ? {} : { maxCachedWorkflows: options.cachedWorkflows }),
    ...options.workerOptions,
  });
  let stopped = false;
  const reconcile = async () => {
    if (stopped) return;
    try {
      const started = await options.outbox.reconcile(options.reconcileIntervalMs);
      if (started > 0)
        options.logger.warn({ started }, 'reconciler started workflows left behind by an interrupted request');
    } catch (err) {
      options.logger.error({ err }, 'outbox reconcile failed');
    }
  };
  const timer = setInterval(() => void reconcile(), options.reconcileIntervalMs);
  timer.unref();
  void reconcile();
  const done = worker.run().finally(() => {
    stopped = true;
    clearInterval(timer);
  });
  return {
    worker,
    done,
    async shutdown() {
      stopped = true;
      clearInterval(timer);
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}
