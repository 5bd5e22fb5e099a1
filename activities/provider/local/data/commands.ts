import path from 'node:path';
import { isExecutable } from '../../../../platform/executable';
import { appUid } from '../../../../platform/local-layout';
import type { DataEngine } from '../../../../platform/drivers/data';
import type { Isolation, SandboxOwner } from '../sandbox/isolation';
import { launch, SYSTEM_PATH, type Workload } from '../sandbox/launcher';

/** A database server's command in the cluster's sandbox (`asCluster`), ready for `run` or `launch`. */
export interface ClusterCommand {
  iso: Isolation;
  workload: Workload;
}

/** Whether the machine has what sandboxes need: never asked of Berth's own tools. */
export const OWN_TOOL: Isolation = { uidSwitch: false, cgroups: false, cgroupRoot: '', summary: "Berth's own tools" };

/**
 * Runs one of Berth's own tools (argv) or a cluster's command to its end through the
 * launcher; rejects with the command's last output lines when it fails. `started` receives
 * a way to stop it while it runs.
 */
export async function run(
  command: string[] | ClusterCommand,
  options: { env?: NodeJS.ProcessEnv; okCodes?: number[]; input?: string; started?(stop: () => void): void } = {},
): Promise<string> {
  const { iso, workload } = Array.isArray(command)
    ? { iso: OWN_TOOL, workload: { sandbox: null, command } satisfies Workload }
    : command;
  const argv = workload.command;
  const launched = await launch(iso, {
    ...workload,
    env: options.env ?? workload.env,
    input: options.input ?? '',
  });
  const { child } = launched;
  options.started?.(() => launched.kill('SIGKILL'));
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.stderr!.on('data', (b: Buffer) => out.push(b));
    child.on('error', reject);
    child.on('close', (code) => {
      const text = Buffer.concat(out).toString('utf8');
      if ((options.okCodes ?? [0]).includes(code ?? -1)) resolve(text);
      else
        reject(
          new Error(
            `${path.basename(argv[0]!)} ${argv[0] === '/bin/sh' ? '' : argv.slice(1, 3).join(' ')} exited with ${code}: ${text.trim().split('\n').slice(-5).join(' | ')}`,
          ),
        );
    });
  });
}

/** The unprivileged uid a database server runs as when Berth is root: one per cluster, from the same math as app uids. */
export const clusterUid = (clusterId: string) => appUid(clusterId);

/** The uid of `nobody`: initdb needs a passwd entry, so the cluster is created as it and then handed to the cluster's uid. */
export const NOBODY = 65534;

/** The sandbox of a database cluster's servers and tools: its own cgroup and uid. */
export const clusterOwner = (clusterId: string): SandboxOwner => ({ kind: 'db', id: clusterId });

/**
 * The memory below which an engine's server does not start: in a smaller cgroup the kernel
 * kills it before it writes a line of log (pg_ctl: "could not start server", an empty
 * server.log). A PostgreSQL standby peaks near 20 MiB while it starts; its configuration
 * (shared_buffers) is sized from at least this much.
 */
const MIN_SERVER_RAM: Partial<Record<DataEngine, number>> = { postgres: 64 * 2 ** 20 };

/** The memory a cluster's servers get (its cgroup limit): its ram_size, at least its engine's minimum. */
export const serverRamBytes = (cluster: { engine: DataEngine; ram_size: number | string }): number =>
  Math.max(Number(cluster.ram_size), MIN_SERVER_RAM[cluster.engine] ?? 0);

/**
 * `command` as a workload of the cluster: its own uid inside its cgroups (its cpu quota and
 * `serverRamBytes`), or as is when Berth is not root; only the system PATH in its environment.
 */
export function asCluster(
  iso: Isolation,
  cluster: { id: string; engine: DataEngine; cpu_size: number; ram_size: number | string },
  command: string[],
  uid = clusterUid(cluster.id),
): ClusterCommand {
  const limits = { memoryBytes: serverRamBytes(cluster), cpus: Number(cluster.cpu_size) };
  return { iso, workload: { sandbox: { owner: clusterOwner(cluster.id), uid, limits }, command } };
}

/** Hands a folder (recursively) to the cluster's uid; a no-op when Berth is not root. */
export async function giveTo(iso: Isolation, dir: string, uid: number): Promise<void> {
  if (iso.uidSwitch) await run(['chown', '-R', `${uid}:${uid}`, dir]);
}

/** Where server binaries are looked up unless told (the sbin folders are where distributions put daemons). */
export const DEFAULT_SEARCH_PATH = SYSTEM_PATH;

/**
 * The first of `names` found as an executable: `configured` when given (it must exist), else
 * on the search path (the standard folders unless told).
 */
export function findBinary(names: string[], configured: string | undefined, searchPath?: string): string | null {
  if (configured) return isExecutable(configured) ? configured : null;
  const dirs = (searchPath ?? DEFAULT_SEARCH_PATH).split(':').filter(Boolean);
  for (const name of names) for (const dir of dirs) if (isExecutable(path.join(dir, name))) return path.join(dir, name);
  return null;
}
