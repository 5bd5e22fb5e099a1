import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import type { Config } from '../platform/config';
import { WORKFLOWS_PATH } from '../worker/main';

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
