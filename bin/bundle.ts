import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { ActivityDeps } from '../activities/deps';
import type { Config } from '../platform/config';
import { limitWorkerHeap } from '../worker/heap';
import { startWorker, WORKFLOWS_PATH, type WorkerHandle } from '../worker/main';
import type { Runtime } from '../worker/runtime';

/** `berth bundle <file>`: writes the workflow bundle a worker loads (BERTH_WORKFLOW_BUNDLE). */
export async function runBundle(file: string | undefined): Promise<void> {
  if (!file) throw new Error('usage: berth bundle <file>');
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
  writeFileSync(file, code);
}

export interface WorkflowBundle {
  codePath: string;
  /** Removes a bundle built for this start (once the worker has loaded it). */
  discard(): void;
}

/**
 * The workflow bundle a worker loads: BERTH_WORKFLOW_BUNDLE, or one `berth bundle` builds
 * now in a child process. Bundling in the worker's own process (webpack) grows its heap by
 * about 110 MB that it keeps for its whole life (docs/performance.md); the child takes
 * that memory with it when it exits.
 */
export async function workflowBundle(config: Config): Promise<WorkflowBundle> {
  if (config.workflowBundle) return { codePath: config.workflowBundle, discard: () => {} };
  const dir = mkdtempSync(path.join(tmpdir(), 'berth-workflows-'));
  const codePath = path.join(dir, 'workflow-bundle.js');
  const child = spawn(process.execPath, [path.join(__dirname, 'berth.js'), 'bundle', codePath], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`bundling the workflows failed (berth bundle exited ${code})`);
  }
  return { codePath, discard: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The worker of `berth dev` and `berth worker`: Berth's task queue on the runtime's
 * connection, its workflows from a bundle built outside this process (`workflowBundle`).
 */
export async function startConfiguredWorker(
  runtime: Runtime,
  config: Config,
  deps: ActivityDeps,
  logger: Logger,
): Promise<WorkerHandle> {
  const bundle = await workflowBundle(config);
  limitWorkerHeap(config.workerHeap);
  return startWorker({
    connection: await runtime.nativeConnection(),
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    deps,
    outbox: runtime.outbox,
    logger,
    reconcileIntervalMs: config.reconcileIntervalMs,
    workflowBundle: { codePath: bundle.codePath },
    cachedWorkflows: config.workerCachedWorkflows,
  }).finally(() => bundle.discard());
}
