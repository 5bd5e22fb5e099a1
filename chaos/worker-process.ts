import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { TestStack } from '../test/support/stack';
import { RECEIVER_ALLOW } from '../test/support/webhooks';

export interface WorkerProcess {
  child: ChildProcess;
  /** Every line the worker wrote (its JSON log). */
  lines: string[];
  /** Resolves once the worker polls its task queue. */
  ready: Promise<void>;
  /** Resolves when the process has exited. */
  exited: Promise<void>;
}

/**
 * `berth worker` (the production entry point) in a child process of its own, on the
 * stack's database, Temporal server and task queue, with the stack's secret keyring.
 */
export function spawnWorker(stack: TestStack, secretKeyring: string, env: NodeJS.ProcessEnv = {}): WorkerProcess {
  const child = spawn(process.execPath, [path.join(__dirname, '..', 'bin', 'berth.js'), 'worker'], {
    env: {
      ...process.env,
      DATABASE_URL: stack.db.url,
      TEMPORAL_ADDRESS: stack.config.temporalAddress,
      BERTH_TASK_QUEUE: stack.taskQueue,
      BERTH_SECRET_KEY: secretKeyring,
      BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW,
      BERTH_PROVIDER_LATENCY_MS: '0',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let buffered = '';
  const collect = (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    lines.push(...parts.filter(Boolean));
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (lines.some((l) => l.includes('berth worker running'))) {
        clearInterval(timer);
        resolve();
      }
    }, 100);
    void exited.then(() => {
      clearInterval(timer);
      reject(new Error(`worker exited before it ran: ${lines.slice(-5).join('\n')}`));
    });
  });
  return { child, lines, ready, exited };
}
