import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { TestStack } from '../test/support/stack';
import { ROOT } from '../test/support/env';
import { RECEIVER_ALLOW } from '../test/support/webhooks';

export interface BerthProcess {
  child: ChildProcess;
  /** The lines the process wrote (its JSON log), the newest KEPT_LINES of them. */
  lines: string[];
  /** Resolves once the process logged that it runs (the worker polls, the API listens). */
  ready: Promise<void>;
  /** Resolves when the process has exited. */
  exited: Promise<void>;
}

/** A long run must not hold every log line of its processes. */
const KEPT_LINES = 1000;

/** The log line each command writes once it runs. */
const READY: Record<'worker' | 'api', string> = { worker: 'berth worker running', api: 'berth api listening' };

/**
 * Berth's two entry points: the TypeScript run through tsx (`npm start`, the tests), and the
 * compiled build (`npm run build`: dist/, what the image runs).
 */
export const BERTH_ENTRY = {
  tsx: path.join(ROOT, 'bin', 'berth.js'),
  compiled: path.join(ROOT, 'dist', 'bin', 'berth.js'),
} as const;

/**
 * How the image runs Berth beyond its configuration; the benches start the compiled
 * processes the same way (test/unit/compiled-build.test.ts and compose.test.ts hold the
 * Dockerfile and docker-compose.yml to it; docs/decisions.md "A worker bounds its heaps'
 * garbage").
 * - `env`, the Dockerfile's ENV for every process: glibc's malloc keeps an arena per thread
 *   that contends (up to eight per core), and a worker's threads (the workflow thread,
 *   Temporal's core, libuv's pool, V8's helpers) leave 20-30 MB more in them than two do.
 * - `workerNodeArgs`, node's flags for `berth worker`: the main thread's young generation
 *   is fixed when the process starts (the workflow thread's is set by the worker itself).
 */
export const IMAGE = {
  env: { MALLOC_ARENA_MAX: '2' },
  workerNodeArgs: ['--max-semi-space-size=4'],
} as const;

/** `npm run build`: the compiled entry point, made anew (a bench of the deployed shape runs it). */
export function buildBerth(): void {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
}

/**
 * `berth <command>` (the production entry point; `entry` says which build of it) in a child
 * process of its own, on the stack's database, Temporal server and task queue, with the
 * stack's secret keyring.
 */
export function spawnBerth(
  command: 'worker' | 'api',
  stack: TestStack,
  secretKeyring: string,
  env: NodeJS.ProcessEnv = {},
  entry: keyof typeof BERTH_ENTRY = 'tsx',
): BerthProcess {
  const asImage = entry === 'compiled';
  const nodeArgs = asImage && command === 'worker' ? IMAGE.workerNodeArgs : [];
  const child = spawn(process.execPath, [...nodeArgs, BERTH_ENTRY[entry], command], {
    env: {
      ...process.env,
      DATABASE_URL: stack.db.url,
      TEMPORAL_ADDRESS: stack.config.temporalAddress,
      BERTH_TASK_QUEUE: stack.taskQueue,
      BERTH_SECRET_KEY: secretKeyring,
      BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW,
      BERTH_PROVIDER_LATENCY_MS: '0',
      LOG_LEVEL: 'info',
      ...(asImage ? IMAGE.env : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let buffered = '';
  let running = false;
  const collect = (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    lines.push(...parts.filter(Boolean));
    running ||= parts.some((l) => l.includes(READY[command]));
    if (lines.length > KEPT_LINES) lines.splice(0, lines.length - KEPT_LINES);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (running) {
        clearInterval(timer);
        resolve();
      }
    }, 100);
    void exited.then(() => {
      clearInterval(timer);
      reject(new Error(`berth ${command} exited before it ran: ${lines.slice(-5).join('\n')}`));
    });
  });
  return { child, lines, ready, exited };
}

/** `berth worker` in a child process of its own (see spawnBerth). */
export function spawnWorker(stack: TestStack, secretKeyring: string, env: NodeJS.ProcessEnv = {}): BerthProcess {
  return spawnBerth('worker', stack, secretKeyring, env);
}
