import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { JobRun } from '../../../../platform/drivers/data';

/** How much of a cron run's output is kept: its last 64 KiB. */
export const JOB_LOG_BYTES = 64 * 1024;
/** A cron run is killed after this long (below the 30 minutes of the cronjobRun activity). */
export const JOB_TIME_LIMIT_MS = 25 * 60_000;
/** The exit code reported for a run killed at its time limit (as `timeout(1)` does). */
export const JOB_TIMEOUT_EXIT = 124;

/** The last `max` bytes of a stream of chunks, with how many were dropped before them. */
class Tail {
  private chunks: Buffer[] = [];
  private size = 0;
  dropped = 0;

  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > this.max) {
      const first = this.chunks[0]!;
      const over = this.size - this.max;
      if (first.length <= over) {
        this.chunks.shift();
        this.size -= first.length;
        this.dropped += first.length;
      } else {
        this.chunks[0] = first.subarray(over);
        this.size -= over;
        this.dropped += over;
      }
    }
  }

  text(): string {
    const body = Buffer.concat(this.chunks).toString('utf8');
    return this.dropped > 0 ? `[${this.dropped} earlier bytes of output omitted]\n${body}` : body;
  }
}

/**
 * Runs one cron job's (already isolated) argv to its end: stdout and stderr interleaved as
 * they come, the last `logBytes` kept; past `timeLimitMs` its whole process group is killed
 * and the run answers exit code 124 with a note. A run killed by a signal answers 128 + n.
 */
export function runJobProcess(
  argv: string[],
  options: { cwd: string; env: Record<string, string>; timeLimitMs?: number; logBytes?: number },
): Promise<JobRun> {
  const limit = options.timeLimitMs ?? JOB_TIME_LIMIT_MS;
  const tail = new Tail(options.logBytes ?? JOB_LOG_BYTES);
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // gone already
      }
    };
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, limit);
    child.stdout!.on('data', (c: Buffer) => tail.push(c));
    child.stderr!.on('data', (c: Buffer) => tail.push(c));
    let spawnError: Error | null = null;
    let ended: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    child.once('error', (err) => {
      spawnError = err;
    });
    // the command ended: what it left behind in its group goes too (it would hold the output open)
    child.once('exit', (code, signal) => {
      ended = { code, signal };
      killGroup();
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const { code: exit, signal: sig } = ended ?? { code, signal };
      if (spawnError) {
        resolve({
          exitCode: 127,
          log: `${tail.text()}the command could not start: ${(spawnError as Error).message}\n`,
        });
      } else if (timedOut) {
        resolve({
          exitCode: JOB_TIMEOUT_EXIT,
          log: `${tail.text()}\nkilled: the run exceeded its time limit of ${Math.round(limit / 1000)} s\n`,
        });
      } else {
        resolve({ exitCode: exit ?? 128 + (sig ? (constants.signals[sig] ?? 0) : 0), log: tail.text() });
      }
    });
  });
}
