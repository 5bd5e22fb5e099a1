import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * docker-compose.yml's `cpu_shares`: the services that do background work (the worker's
 * retries and builds, the Temporal server behind them) weigh a quarter of Docker's default
 * (1,024, which the API, PostgreSQL and the rest keep), so that the API's requests come first
 * when the cores are contended (docs/decisions.md "Background work yields the cores to the
 * API"). test/unit/compose.test.ts holds the file to it.
 */
export const COMPOSE_CPU_SHARES = { worker: 256, temporal: 256 } as const;

export type BackgroundService = keyof typeof COMPOSE_CPU_SHARES;

const CGROUP_ROOT = '/sys/fs/cgroup';

/** Where the background services of a bench run on the machine's cores. */
export interface BackgroundCpu {
  /** Why the weights (or the cores) could not be applied (no writable cgroup v1 controller); undefined when they are. */
  refused?: string;
  /** Moves `pid` (every thread of it) into `service`'s groups. */
  place(service: BackgroundService, pid: number): void;
  /** What the run gave the background services, for its report. */
  describe(): string;
  /** Moves the placed processes back to the root groups and removes the groups. */
  close(): void;
}

/**
 * cgroup v1 groups, siblings of the machine's other processes directly under each
 * controller's root (as Docker's are under its own), that weigh each background service as
 * docker-compose.yml does (cpu.shares) and, given `cpus` (a cpuset list such as "1"), confine
 * both to those cores (compose's `cpuset`, systemd's `AllowedCPUs=`). Where the groups cannot
 * be made, `refused` says so and nothing is placed.
 */
export function backgroundCpu(options: { cpus?: string; root?: string } = {}): BackgroundCpu {
  const root = options.root ?? CGROUP_ROOT;
  const name = (suffix: string) => `berth-bench-${process.pid}-${suffix}`;
  const sharesDir = (service: BackgroundService) => path.join(root, 'cpu', name(service));
  const cpusetDir = path.join(root, 'cpuset', name('background'));
  const placed: number[] = [];
  const made: string[] = [];
  const close = () => {
    for (const pid of placed)
      for (const controller of ['cpu', 'cpuset'])
        try {
          writeFileSync(path.join(root, controller, 'cgroup.procs'), String(pid));
        } catch {
          // the process has ended, or it was never in that controller's group
        }
    for (const group of [...made].reverse())
      try {
        rmdirSync(group);
      } catch {
        // still busy or gone: left for the machine's owner, named after this process
      }
  };
  const make = (dir: string, settings: Record<string, string>) => {
    mkdirSync(dir);
    made.push(dir);
    for (const [file, value] of Object.entries(settings)) writeFileSync(path.join(dir, file), value);
  };
  try {
    for (const [service, shares] of Object.entries(COMPOSE_CPU_SHARES))
      make(sharesDir(service as BackgroundService), { 'cpu.shares': String(shares) });
    if (options.cpus) {
      // a cpuset group takes no process before it has both its cores and its memory nodes
      const mems = readFileSync(path.join(root, 'cpuset', 'cpuset.mems'), 'utf8').trim();
      make(cpusetDir, { 'cpuset.cpus': options.cpus, 'cpuset.mems': mems });
    }
  } catch (err) {
    close();
    const { code, message } = err as NodeJS.ErrnoException;
    const missing = code === 'ENOENT' || code === 'EACCES' || code === 'EPERM' || code === 'EROFS';
    const reason = missing
      ? `no writable cgroup v1 cpu${options.cpus ? ' or cpuset' : ''} controller under ${root} (${message})`
      : `the groups under ${root} refused the settings${options.cpus ? ` (cores "${options.cpus}")` : ''}: ${message}`;
    return {
      refused: reason,
      place: () => undefined,
      describe: () => `WITHOUT compose's CPU weights: ${reason}`,
      close: () => undefined,
    };
  }
  const weights = Object.entries(COMPOSE_CPU_SHARES)
    .map(([service, n]) => `${service} ${n}`)
    .join(', ');
  return {
    place(service, pid) {
      writeFileSync(path.join(sharesDir(service), 'cgroup.procs'), String(pid));
      placed.push(pid);
      if (options.cpus) writeFileSync(path.join(cpusetDir, 'cgroup.procs'), String(pid));
    },
    describe: () =>
      `CPU shares as docker-compose.yml sets them: ${weights} (the API and the rest 1024)` +
      (options.cpus ? `; worker and Temporal confined to CPUs ${options.cpus}` : ''),
    close,
  };
}
