import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { namespacePids } from './router';

/**
 * A VPC's resolver: Debian's dnsmasq inside the router namespace, at the VPC's resolver
 * address (base + 2), answering the attachments' fqdns from a directory of hosts files it
 * watches (one file per plugged workload, so a name follows its workload across restarts
 * and replicas without a reload). It is authoritative for those names only: it has no
 * upstream (the router has no way out), so any other name gets REFUSED, and workloads keep
 * the platform's resolver for the rest. It runs unprivileged (nobody) once its port is bound.
 */

export interface ResolverPlace {
  /** The router namespace. */
  ns: string;
  /** The VPC's files (vpcRunDir). */
  dir: string;
  address: string;
}

const hostsDir = (dir: string) => path.join(dir, 'hosts');
const pidFile = (dir: string) => path.join(dir, 'resolver.pid');

export const RESOLVER_BINARY = 'dnsmasq';

/** The resolver's pid when it runs in its namespace, else null. */
export async function resolverPid(place: ResolverPlace): Promise<number | null> {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile(place.dir), 'utf8').trim());
  } catch {
    return null;
  }
  if (!(await namespacePids(place.ns)).includes(pid)) return null;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(RESOLVER_BINARY) ? pid : null;
  } catch {
    return null;
  }
}

/**
 * Starts the resolver unless it runs (idempotent). It stays Berth's child (Berth reaps it
 * when it ends: a daemon would be left to an init that may not reap); the pid file names it
 * to a restarted Berth, which adopts it.
 */
export async function ensureResolver(place: ResolverPlace): Promise<void> {
  if (await resolverPid(place)) return;
  mkdirSync(hostsDir(place.dir), { recursive: true, mode: 0o755 });
  const child = spawn(
    'ip',
    [
      'netns',
      'exec',
      place.ns,
      RESOLVER_BINARY,
      '--keep-in-foreground',
      '--conf-file=/dev/null',
      '--no-resolv',
      '--no-hosts',
      '--no-poll',
      '--bind-interfaces',
      `--listen-address=${place.address}`,
      `--hostsdir=${hostsDir(place.dir)}`,
      `--pid-file=${pidFile(place.dir)}`,
      '--user=nobody',
      '--group=nogroup',
      // names follow workloads across restarts: no client keeps an old answer long
      '--local-ttl=5',
      `--log-facility=${path.join(place.dir, 'resolver.log')}`,
    ],
    { stdio: 'ignore', detached: true },
  );
  child.unref();
  // up once it has written its pid file (it binds its port first), or a clear error
  const until = Date.now() + 5000;
  while (!(await resolverPid(place))) {
    if (child.exitCode !== null || Date.now() > until)
      throw new Error(
        `the VPC resolver (dnsmasq) did not start in ${place.ns}; see ${path.join(place.dir, 'resolver.log')}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Stops the resolver (idempotent). */
export async function stopResolver(place: ResolverPlace): Promise<void> {
  const pid = await resolverPid(place);
  if (pid) process.kill(pid, 'SIGTERM');
  rmSync(pidFile(place.dir), { force: true });
}

/** Publishes `fqdn` -> `address` for one plugged workload (replaces the file atomically). */
export function publishName(dir: string, key: string, fqdn: string, address: string): void {
  const hosts = hostsDir(dir);
  if (!existsSync(hosts)) mkdirSync(hosts, { recursive: true, mode: 0o755 });
  // written beside the watched folder and moved in: dnsmasq never reads a half-written file
  const staged = path.join(dir, `${key}.staged`);
  writeFileSync(staged, `${address} ${fqdn}\n`, { mode: 0o644 });
  renameSync(staged, path.join(hosts, key));
}

/** Withdraws one plugged workload's name (idempotent). */
export function withdrawName(dir: string, key: string): void {
  rmSync(path.join(hostsDir(dir), key), { force: true });
}

/** Keys of the names published now. */
export function publishedNames(dir: string): string[] {
  try {
    return readdirSync(hostsDir(dir));
  } catch {
    return [];
  }
}
