import { rmdirSync, mkdirSync, writeFileSync } from 'node:fs';
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

const CPU_CONTROLLER = '/sys/fs/cgroup/cpu';

/** Processes given compose's CPU shares, each service in a cgroup of its own, as Docker gives a container. */
export interface CpuShares {
  /** Why the shares could not be applied (no writable cgroup v1 cpu controller); undefined when they are. */
  refused?: string;
  /** Moves `pid` (every thread of it) into `service`'s group. */
  place(service: BackgroundService, pid: number): void;
  /** Moves the placed processes back to the root group and removes the groups. */
  close(): void;
}

/**
 * The cgroup v1 cpu groups (siblings of the machine's other processes, directly under the
 * controller's root, as Docker's are under its own) that weigh the background services as
 * docker-compose.yml does. A bench runs the deployed shape through them; where they cannot be
 * made, `refused` says so and the bench reports that it ran without them.
 */
export function composeCpuShares(controller = CPU_CONTROLLER): CpuShares {
  const dir = (service: BackgroundService) => path.join(controller, `berth-bench-${process.pid}-${service}`);
  const placed: number[] = [];
  const made: string[] = [];
  const close = () => {
    for (const pid of placed) {
      try {
        writeFileSync(path.join(controller, 'cgroup.procs'), String(pid));
      } catch {
        // the process has ended
      }
    }
    for (const group of made) {
      try {
        rmdirSync(group);
      } catch {
        // still busy or gone: left for the machine's owner, named after this process
      }
    }
  };
  try {
    for (const [service, shares] of Object.entries(COMPOSE_CPU_SHARES)) {
      const group = dir(service as BackgroundService);
      mkdirSync(group);
      made.push(group);
      writeFileSync(path.join(group, 'cpu.shares'), String(shares));
    }
  } catch (err) {
    close();
    const reason = `no writable cgroup v1 cpu controller at ${controller} (${(err as Error).message})`;
    return { refused: reason, place: () => undefined, close: () => undefined };
  }
  return {
    place(service, pid) {
      writeFileSync(path.join(dir(service), 'cgroup.procs'), String(pid));
      placed.push(pid);
    },
    close,
  };
}
