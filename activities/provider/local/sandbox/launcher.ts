import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { AppVpcAttachment } from '../../../../platform/drivers/apps';
import type { Attachment, NetworkMember } from '../network/fabric';
import {
  applyLimits,
  isolatedCommand,
  type BindMount,
  type Isolation,
  type Limits,
  type SandboxOwner,
  type SandboxView,
  VIEW_INFO_FD,
  viewApplies,
} from './isolation';

/**
 * The one way the local driver starts a process: every workload (an app replica, a build
 * or release-phase step, a cron run, a database server) and every tool Berth runs for
 * itself (git, tar, chown) goes through `launch`. For a workload it owns the sandbox: the
 * owner's cgroup with its limits, the unprivileged uid, the mount view (volume binds), the
 * environment (only the one given: nothing of Berth's own leaks in, loader variables are
 * kept away from the root part) and the address the workload is reached at.
 */

/** The PATH of everything the launcher starts unless told otherwise: the system's folders only. */
export const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const NSENTER = '/usr/bin/nsenter';

/** This machine's loopback address (IPv4). */
export const LOOPBACK = '127.0.0.1';

/**
 * Where a workload without a network of its own (no fabric on this machine, or a database
 * server) listens and is reached: the machine's loopback.
 */
const WORKLOAD_HOST = LOOPBACK;

/** The port a workload with a network of its own listens on when it names none. */
export const DEFAULT_WORKLOAD_PORT = 8080;

/** Where a workload is reached. */
export interface Address {
  host: string;
  port: number;
}

/** The sandbox of a workload: whose it is, as which uid, with which limits and mounts. */
export interface Sandbox {
  owner: SandboxOwner;
  uid: number;
  /** Applied to the owner's cgroup (created or updated) before the start; absent: as it is. */
  limits?: Limits;
  binds?: BindMount[];
  /** App code's own view of the machine (where it may write, where it starts); absent: the machine's. */
  view?: SandboxView;
  /** Supplementary groups (shared volumes' gids); none otherwise. */
  extraGids?: number[];
  umask?: number;
}

export interface Workload {
  /** null: a tool Berth runs for itself (as Berth, no sandbox), e.g. git fetch with a credential. */
  sandbox: Sandbox | null;
  /**
   * The workload's own network namespace (when the machine has the fabric, `iso.network`):
   * `name` identifies it (the same name is the same namespace and address, e.g. a replica
   * restarted after a crash); `ephemeral` ones (a cron run, a build step) are removed when
   * the process ends, the others by their owner (`releaseNetwork`). A container's `podman
   * run` (no sandbox of the launcher's) has one too: the container shares it. `vpcs`: the VPC
   * subnets it is plugged into as well (when the machine has the VPC fabric, `iso.vpcs`).
   */
  network?: { name: string; member: NetworkMember; ephemeral?: boolean; vpcs?: AppVpcAttachment[] };
  command: string[];
  cwd?: string;
  /** The whole environment (default: PATH with the system folders); unset values are left out. */
  env?: NodeJS.ProcessEnv;
  /** The workload serves on a port: the launcher gives it an address, and PORT in its environment. */
  listens?: boolean;
  /** In a network of its own it listens on this port (the app's internal port; default 8080); else on a free loopback port. */
  port?: number;
  /** Output: piped to the caller (default), dropped (a server that writes its own log), or into an open file (its descriptor). */
  output?: 'pipe' | 'ignore' | number;
  /** Written to its standard input, which is then closed (default: no input). */
  input?: string;
}

export interface Launched {
  /** Leader of a process group of its own (with a view: bubblewrap, which ends with the sandbox). */
  child: ChildProcess;
  /** Where it is reached (workloads that listen), else null. */
  address: Address | null;
  /** Its place on the workload network, when it has one. */
  network: Attachment | null;
  /**
   * Signals everything it started: the process group; with a view, the sandbox's own group
   * (SIGTERM reaches the workload alone, which may end gracefully; bwrap ends with it) and,
   * for SIGKILL, bwrap's too.
   */
  kill(signal: NodeJS.Signals): void;
}

/** The sandbox's pid (`child-pid` of bubblewrap's info), or null once the stream ends without it. */
function sandboxPid(info: Readable): Promise<number | null> {
  return new Promise((resolve) => {
    let text = '';
    info.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const found = /"child-pid":\s*(\d+)/.exec(text);
      if (found) resolve(Number(found[1]));
    });
    info.on('error', () => resolve(null));
    info.on('close', () => resolve(null));
  });
}

/** A port nobody listens on now at `host` (the kernel picks it; the workload binds it soon after). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** The host a workload of the owner listens on and is reached at. */
export function workloadHost(_owner: SandboxOwner): string {
  return WORKLOAD_HOST;
}

/** Where a server the owner runs on a port of its own choosing (a database's) is reached. */
export function serverAddress(owner: SandboxOwner, port: number): Address {
  return { host: workloadHost(owner), port };
}

/** The address Berth itself connects to workloads from (pg_hba, grants of a server's admin user). */
export const PLATFORM_CLIENT_HOST = LOOPBACK;

/** Removes a workload's network namespace (idempotent; nothing without the fabric). */
export async function releaseNetwork(iso: Isolation, name: string): Promise<void> {
  await iso.vpcs?.unplug(name);
  await iso.network?.detach(name);
}

export async function launch(iso: Isolation, workload: Workload): Promise<Launched> {
  const box = workload.sandbox;
  const wanted = workload.network && iso.network ? workload.network : null;
  const netName = wanted && (wanted.ephemeral ? `${wanted.name}-${randomBytes(3).toString('hex')}` : wanted.name);
  const network = wanted && netName ? await iso.network!.attach(netName, wanted.member) : null;
  if (network && wanted?.vpcs?.length) {
    if (!iso.vpcs) throw new Error('the workload is attached to a VPC, and this machine has no VPC fabric');
    await iso.vpcs.plug(netName!, path.basename(network.netnsPath), wanted.vpcs).catch(async (err: Error) => {
      await releaseNetwork(iso, netName!);
      throw err;
    });
  }
  const address = !workload.listens
    ? null
    : network
      ? { host: network.address, port: workload.port ?? DEFAULT_WORKLOAD_PORT }
      : { host: WORKLOAD_HOST, port: await freePort(WORKLOAD_HOST) };
  const given: Record<string, string> = { PATH: SYSTEM_PATH };
  for (const [key, value] of Object.entries(workload.env ?? {})) if (value !== undefined) given[key] = value;
  if (address) given.PORT = String(address.port);
  let argv = workload.command;
  let env = given;
  if (box) {
    if (box.limits) applyLimits(iso, box.owner, box.limits);
    ({ argv, env } = isolatedCommand(
      iso,
      {
        owner: box.owner,
        uid: box.uid,
        binds: box.binds,
        extraGids: box.extraGids,
        umask: box.umask,
        view: box.view && network ? { ...box.view, resolvConf: network.resolvConf } : box.view,
      },
      workload.command,
      given,
    ));
  }
  // the namespace is joined first, as root: everything after (cgroups, the uid drop, bubblewrap) runs inside it
  if (network) argv = [NSENTER, `--net=${network.netnsPath}`, '--', ...argv];
  const viewed = viewApplies(iso, box?.view);
  const out = workload.output ?? 'pipe';
  // the compiled filter, read by bubblewrap at VIEW_SECCOMP_FD (after the info pipe at 3)
  const seccompFd = viewed && iso.seccomp ? openSync(iso.seccomp, 'r') : null;
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: workload.cwd,
    env,
    detached: true,
    stdio: [
      workload.input === undefined ? 'ignore' : 'pipe',
      out,
      out,
      ...(viewed ? (['pipe'] as const) : []),
      ...(seccompFd !== null ? [seccompFd] : []),
    ],
  });
  if (seccompFd !== null) closeSync(seccompFd); // the child has its own copy
  if (workload.input !== undefined) {
    child.stdin!.on('error', () => {}); // a command that exits before reading its input
    child.stdin!.end(workload.input);
  }
  if (network && wanted?.ephemeral) child.once('close', () => void releaseNetwork(iso, netName!));
  const sandbox = viewed ? sandboxPid(child.stdio[VIEW_INFO_FD] as Readable) : Promise.resolve(null);
  const kill = (signal: NodeJS.Signals) => {
    if (!viewed) return killProcessGroup(child.pid, signal);
    void sandbox.then((pid) => {
      if (pid) killProcessGroup(pid, signal);
      if (!pid || signal === 'SIGKILL') killProcessGroup(child.pid, signal);
    });
  };
  return { child, address, network, kill };
}

/** Kills a process group by its leader's pid; a gone group is fine. */
export function killProcessGroup(pid: number | undefined, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone
  }
}
