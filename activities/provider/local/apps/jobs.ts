import { constants } from 'node:os';
import { ApplicationFailure } from '@temporalio/common';
import { appUid } from '../../../../platform/local-layout';
import type { JobRequest, JobRun } from '../../../../platform/drivers/data';
import type { AppsContext } from './context';
import { networkMember } from './network-member';
import { releaseRun } from './release-run';
import type { Isolation } from '../sandbox/isolation';
import { launch, type Workload } from '../sandbox/launcher';

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
 * Runs one cron job's workload to its end: stdout and stderr interleaved as
 * they come, the last `logBytes` kept; past `timeLimitMs` its whole process group is killed
 * and the run answers exit code 124 with a note. A run killed by a signal answers 128 + n.
 */
export async function runJobProcess(
  iso: Isolation,
  workload: Workload,
  options: { timeLimitMs?: number; logBytes?: number } = {},
): Promise<JobRun> {
  const limit = options.timeLimitMs ?? JOB_TIME_LIMIT_MS;
  const tail = new Tail(options.logBytes ?? JOB_LOG_BYTES);
  const launched = await launch(iso, workload);
  const { child } = launched;
  return new Promise((resolve) => {
    const killGroup = () => launched.kill('SIGKILL');
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

/**
 * Runs a cron job's command (`sh -c`) in the app's current release directory as its
 * replicas run (the run spec the control plane handed over: environment, release PATH,
 * HOME, volumes, quota), in the app's sandbox, within the time limit.
 */
export async function runCronJob(
  ctx: AppsContext,
  input: JobRequest,
  options: { timeLimitMs?: number } = {},
): Promise<JobRun> {
  const row = await ctx.store.get(input.appUuid);
  if (!row?.release_id) {
    throw ApplicationFailure.nonRetryable(
      `app ${input.appUuid} has no release yet: deploy it before its cron jobs can run`,
      'LocalNoRelease',
    );
  }
  const manifest = await ctx.builder.manifest(input.appUuid, row.release_id);
  if (!manifest)
    throw ApplicationFailure.nonRetryable(
      `release ${row.release_id} of app ${input.appUuid} is missing on this machine`,
      'LocalReleaseMissing',
    );
  const run = await releaseRun(ctx, input.appUuid, row.release_id, manifest, input.run);
  const { binds, gids, umask } = run.volumes;
  ctx.log.berth(input.appUuid, `cron job run started in release ${row.release_id}`);
  const result = await runJobProcess(
    ctx.isolation,
    {
      sandbox: {
        owner: { kind: 'app', id: input.appUuid },
        uid: appUid(input.appUuid),
        limits: run.limits,
        view: run.view,
        binds,
        extraGids: gids,
        umask,
        network: {
          name: `job-${input.appUuid}`,
          member: networkMember(input.appUuid, input.run, false),
          ephemeral: true,
        },
      },
      command: ['/bin/sh', '-c', input.command],
      cwd: run.releaseDir,
      env: run.env,
    },
    options,
  );
  ctx.log.berth(input.appUuid, `cron job run exited with code ${result.exitCode}`);
  return result;
}
