import { spawn } from 'node:child_process';
import path from 'node:path';
import { isExecutable } from '../../../../platform/executable';
import { appUid } from '../../../../platform/local-layout';
import { applyLimits, isolatedArgv, type Isolation } from '../sandbox/isolation';

/** Runs argv to its end; rejects with the command's last output lines when it fails. */
export function run(
  argv: string[],
  options: { env?: NodeJS.ProcessEnv; okCodes?: number[]; input?: string } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      ...(options.env ? { env: options.env } : {}),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => out.push(b));
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
    child.stdin.on('error', () => {}); // a command that exits before reading its input
    child.stdin.end(options.input ?? '');
  });
}

/** The unprivileged uid a database server runs as when Berth is root: one per cluster, from the same math as app uids. */
export const clusterUid = (clusterId: string) => appUid(clusterId);

/** The uid of `nobody`: initdb needs a passwd entry, so the cluster is created as it and then handed to the cluster's uid. */
export const NOBODY = 65534;

/**
 * The argv that runs `command` as the cluster's own uid inside its cgroups (its cpu and
 * ram quota), or as is when Berth is not root.
 */
export function asCluster(
  iso: Isolation,
  cluster: { id: string; cpu_size: number; ram_size: number | string },
  command: string[],
  uid = clusterUid(cluster.id),
): string[] {
  const group = `db-${cluster.id}`;
  applyLimits(iso, group, { memoryBytes: Number(cluster.ram_size), cpus: Number(cluster.cpu_size) });
  return isolatedArgv(iso, { group, uid }, command);
}

/** Hands a folder (recursively) to the cluster's uid; a no-op when Berth is not root. */
export async function giveTo(iso: Isolation, dir: string, uid: number): Promise<void> {
  if (iso.uidSwitch) await run(['chown', '-R', `${uid}:${uid}`, dir]);
}

/** Where server binaries are looked up unless told (the sbin folders are where distributions put daemons). */
export const DEFAULT_SEARCH_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

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
