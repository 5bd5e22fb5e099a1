import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import path from 'node:path';
import type { TestStack } from '../../support/stack';

/**
 * The API in a process of its own, against a Temporal address that accepts connections
 * and never answers: a request commits its transaction and then hangs on Temporal, where
 * the test kills the process (SIGKILL) to leave exactly the state a crash leaves.
 */
export interface CrashableApi {
  /** Starts the API process on the stack's database; answers the port it listens on. */
  start(): Promise<number>;
  /** Kills the API process and waits for it to exit. */
  kill(): Promise<void>;
  close(): Promise<void>;
}

export async function crashableApi(stack: TestStack): Promise<CrashableApi> {
  const sockets: Socket[] = [];
  const blackHole = createServer((s) => {
    sockets.push(s);
    s.on('error', () => {});
  });
  await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
  const { address, port: holePort } = blackHole.address() as { address: string; port: number };
  let proc: ChildProcess | undefined;

  const kill = async () => {
    if (!proc) return;
    const exited = new Promise((resolve) => proc!.once('exit', resolve));
    proc.kill('SIGKILL');
    if (proc.exitCode === null && proc.signalCode === null) await exited;
    proc = undefined;
  };

  return {
    start() {
      const env = {
        ...process.env,
        DATABASE_URL: stack.db.url,
        TEMPORAL_ADDRESS: `${address}:${holePort}`,
        BERTH_TASK_QUEUE: stack.taskQueue,
        BERTH_SECRET_KEY: randomBytes(32).toString('base64'),
      };
      const child = spawn(
        process.execPath,
        ['--require', require.resolve('tsx/cjs'), path.join(__dirname, 'api-process.ts')],
        { env, stdio: ['ignore', 'pipe', 'inherit'] },
      );
      proc = child;
      return new Promise((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /listening (\d+)/.exec(out);
          if (m) resolve(Number(m[1]));
        });
        child.once('exit', (code) => reject(new Error(`api process exited early (${code})`)));
      });
    },
    kill,
    async close() {
      await kill();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => blackHole.close(() => resolve()));
    },
  };
}
