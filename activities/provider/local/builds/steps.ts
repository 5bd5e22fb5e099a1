import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Isolation } from '../sandbox/isolation';
import { launch, type Launched, type Workload } from '../sandbox/launcher';
import type { NetworkMember } from '../network/fabric';

/** A build's failure with the reason its deployment shows. */
export class BuildFailed extends Error {}

/** A build on the workload network: on no workspace's network, it reaches nothing of the platform and only goes out. */
export const BUILD_MEMBER: NetworkMember = {
  workspace: null,
  app: null,
  allowConnections: false,
  clusters: [],
  serviceName: null,
};

export interface StepResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The step could not be started (command not found, bad cwd). */
  error: string | null;
}

/**
 * Runs one step (a workload in the build's sandbox, or one of Berth's own tools) through
 * the launcher, in a process group of its own, every stdout and stderr line handed to
 * `log`; `onSpawn` receives the child so the caller can kill its whole group.
 */
export async function runStep(
  iso: Isolation,
  step: Workload,
  options: { log(line: string): void; onSpawn(step: Launched): void },
): Promise<StepResult> {
  const launched = await launch(iso, step);
  const { child } = launched;
  return new Promise((resolve) => {
    options.onSpawn(launched);
    let error: string | null = null;
    const streams = [child.stdout, child.stderr].map(
      (s) =>
        new Promise<void>((done) => {
          createInterface({ input: s!, crlfDelay: Infinity }).on('line', options.log).on('close', done);
        }),
    );
    child.on('error', (err) => {
      error = err.message;
    });
    // what the step left running in its group (a stray background process) ends with it
    child.on('exit', () => killGroup(launched));
    child.on('close', (code, signal) => {
      void Promise.all(streams).then(() => resolve({ code, signal, error }));
    });
  });
}

/** Kills everything the step started (its process group, its sandbox); a gone group is fine. */
export const killGroup = (step: Launched | null) => step?.kill('SIGKILL');

/** How a step ended, for the log and the failure reason. */
export function describeExit(argv: string[], r: StepResult): string {
  const what = argv.join(' ');
  if (r.error) return `${what} could not run: ${r.error}`;
  if (r.signal) return `${what} was killed (${r.signal})`;
  return `${what} exited with code ${r.code}`;
}

/** When the process started (clock ticks since boot, /proc/<pid>/stat): tells a pid from a later process that reuses it. */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** Kills a process group a previous run of Berth left, if its leader is still the process recorded. */
export function killLeftoverGroup(pid: number | null | undefined, startTime: string | null | undefined): void {
  if (!pid || !startTime || processStartTime(pid) !== startTime) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** Kills single processes (those a build's cgroup holds); gone ones are fine. */
export function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
