import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { WorkloadNetwork } from '../network/fabric';
import type { VpcFabric } from '../vpc/fabric';
import { compileSeccompFilter } from './seccomp';

/**
 * How far the local driver can fence off code it runs for users (builds, app replicas, cron
 * runs) on this machine, detected once at start and printed in the start banner:
 *
 * - `uid`: Berth runs as root, so each app's code runs as the app's own unprivileged uid
 *   (platform/local-layout.ts `appUid`), dropped with `setpriv` after joining its cgroups.
 *   Not root: app code runs as Berth's own user (said loudly: it can read Berth's data).
 * - `cgroups`: cgroup v1 memory and cpu controllers are writable: each app gets
 *   `berth/<app uuid>` in both, with its ram quota as memory.limit_in_bytes (the kernel
 *   OOM-kills past it) and its cpu quota as cpu.cfs_quota_us.
 * - `mountNamespaces`: root and `unshare --mount` work: an app's storage volumes are
 *   bind-mounted at their mount paths in a private mount namespace of its own (volumes.ts).
 * - `view`: bubblewrap (`bwrap`) works as an unprivileged uid: an app's code (replicas, cron
 *   runs, build steps) sees only its own processes (a PID namespace), a private /tmp, the
 *   system's folders read-only and, writable, only its release, its home and its volumes:
 *   not other apps' folders, not Berth's data, not the platform's command lines.
 */
export interface Isolation {
  /** App code runs as a per-app unprivileged uid. */
  uidSwitch: boolean;
  /** Memory and CPU quota are enforced through cgroup v1. */
  cgroups: boolean;
  cgroupRoot: string;
  /** Storage volumes are bind-mounted at their mount paths in a private mount namespace (absent: false). */
  mountNamespaces?: boolean;
  /** bubblewrap gives app code a process and filesystem view of its own (absent: false). */
  view?: boolean;
  /** The compiled seccomp filter bubblewrap loads for app code (sandbox/seccomp.ts); absent: none. */
  seccomp?: string;
  /** The workload network (namespaces, routes, policy) when this machine has it: a live object, made at start. */
  network?: WorkloadNetwork;
  /** The VPC fabric (the local driver's VPCs): workloads attached to a VPC are plugged into its subnets. */
  vpcs?: VpcFabric;
  /** One line for the start banner. */
  summary: string;
}

export interface Limits {
  /** Bytes of memory the group may use (ram quota). */
  memoryBytes: number;
  /** CPUs (0.5 = half a core) the group may use. */
  cpus: number;
}

const CGROUP_ROOT = '/sys/fs/cgroup';
const CPU_PERIOD_US = 100_000;

function cgroupsWritable(root: string): boolean {
  const probe = (controller: string) => {
    const dir = path.join(root, controller, 'berth', `.probe-${process.pid}`);
    try {
      mkdirSync(dir, { recursive: true });
      rmdirSync(dir);
      return true;
    } catch {
      return false;
    }
  };
  return existsSync(path.join(root, 'memory', 'cgroup.procs')) && probe('memory') && probe('cpu');
}

function mountNamespacesWork(): boolean {
  try {
    execFileSync('unshare', ['--mount', '--propagation', 'private', 'true'], { stdio: 'ignore', timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

/** Whether bubblewrap runs as an unprivileged uid here (user namespaces allowed, the binary present). */
function viewWorks(): boolean {
  try {
    execFileSync(
      sysBin('setpriv'),
      ['--reuid', '65534', '--regid', '65534', '--clear-groups', '--no-new-privs', '--inh-caps=-all', '--'].concat([
        BWRAP,
        ...viewArgs({ writable: [], cwd: '/' }, []),
        '--',
        '/bin/true',
      ]),
      { stdio: 'ignore', timeout: 5000 },
    );
    return true;
  } catch {
    return false;
  }
}

export function detectIsolation(options: { cgroupRoot?: string; disableCgroups?: boolean } = {}): Isolation {
  const uidSwitch = process.getuid?.() === 0;
  const cgroupRoot = options.cgroupRoot ?? CGROUP_ROOT;
  const cgroups = !options.disableCgroups && uidSwitch && cgroupsWritable(cgroupRoot);
  const mountNamespaces = uidSwitch && mountNamespacesWork();
  const view = uidSwitch && viewWorks();
  const seccomp = view ? compileSeccompFilter() : null;
  const parts = [
    uidSwitch
      ? 'apps run as their own unprivileged uid'
      : "NOT root: apps run as Berth's own user and can read its data",
    cgroups ? 'memory and cpu quota enforced (cgroup v1)' : 'no cgroup quota (cgroup v1 memory/cpu not writable)',
    mountNamespaces
      ? 'storage volumes mounted at their mount paths (private mount namespaces)'
      : 'storage volumes NOT mounted (no mount namespaces): apps find them through BERTH_MOUNT_<PATH> variables',
    view
      ? 'app code sees its own processes and files only (bubblewrap)'
      : "app code sees the machine's processes and files (no bubblewrap: install the bubblewrap package)",
    ...(view
      ? [
          seccomp
            ? "a seccomp filter like the container runtimes' default"
            : 'NO seccomp filter (install python3-seccomp)',
        ]
      : []),
  ];
  return {
    uidSwitch,
    cgroups,
    cgroupRoot,
    mountNamespaces,
    view,
    ...(seccomp ? { seccomp } : {}),
    summary: parts.join('; '),
  };
}

/**
 * Whose sandbox a workload runs in: an app (its replicas, release-phase commands and cron
 * runs), a build (one deployment's build steps) or a database cluster (an add-on's servers).
 * The owner names the workload's cgroup, the one naming scheme: `berth/<kind>-<id>`.
 */
export interface SandboxOwner {
  kind: 'app' | 'build' | 'db';
  id: string;
}

/** The cgroup (under `berth/` in each controller) of the owner's workloads. */
export const cgroupName = (owner: SandboxOwner): string => `${owner.kind}-${owner.id}`;

function groupDir(iso: Isolation, controller: 'memory' | 'cpu', owner: SandboxOwner): string {
  return path.join(iso.cgroupRoot, controller, 'berth', cgroupName(owner));
}

/** Creates (or updates) the owner's cgroups with its limits; a no-op without cgroups. */
export function applyLimits(iso: Isolation, owner: SandboxOwner, limits: Limits): void {
  if (!iso.cgroups) return;
  const mem = groupDir(iso, 'memory', owner);
  const cpu = groupDir(iso, 'cpu', owner);
  mkdirSync(mem, { recursive: true });
  mkdirSync(cpu, { recursive: true });
  const bytes = String(Math.max(4 * 1024 * 1024, Math.floor(limits.memoryBytes)));
  // No swap past the limit where the kernel accounts swap. It refuses a memory limit above
  // the memory+swap one and a memory+swap limit below the memory one: memory+swap before
  // (a raise) and after (a cut) the memory limit.
  const noSwap = () => {
    try {
      writeFileSync(path.join(mem, 'memory.memsw.limit_in_bytes'), bytes);
    } catch {
      // swap accounting is off (memory.limit_in_bytes alone applies), or this is a cut: written after
    }
  };
  noSwap();
  writeFileSync(path.join(mem, 'memory.limit_in_bytes'), bytes);
  noSwap();
  writeFileSync(path.join(cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
  writeFileSync(path.join(cpu, 'cpu.cfs_quota_us'), String(Math.max(1000, Math.round(limits.cpus * CPU_PERIOD_US))));
}

/** How many times the kernel OOM-killed a process of the group (0 without cgroups). */
export function oomKills(iso: Isolation, owner: SandboxOwner): number {
  if (!iso.cgroups) return 0;
  try {
    const m = /oom_kill (\d+)/.exec(
      readFileSync(path.join(groupDir(iso, 'memory', owner), 'memory.oom_control'), 'utf8'),
    );
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** The processes in the group (read from its memory cgroup; empty without cgroups or when it is gone). */
export function groupProcesses(iso: Isolation, owner: SandboxOwner): number[] {
  if (!iso.cgroups) return [];
  try {
    return readFileSync(path.join(groupDir(iso, 'memory', owner), 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * Removes the app's cgroups (after its last process ended); absent groups are fine. False
 * while a group still holds processes (EBUSY): the caller may wait and try again.
 */
export function removeLimits(iso: Isolation, owner: SandboxOwner): boolean {
  if (!iso.cgroups) return true;
  let removed = true;
  for (const controller of ['memory', 'cpu'] as const) {
    try {
      rmdirSync(groupDir(iso, controller, owner));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') removed = false;
    }
  }
  return removed;
}

/** A folder made visible at another absolute path inside the process's own mount namespace. */
export interface BindMount {
  source: string;
  target: string;
}

/**
 * A system binary by absolute path: the root part of an isolated command must not look
 * names up on the app's PATH (its release's `node_modules/.bin` comes first there).
 */
function sysBin(name: string): string {
  return (
    ['/usr/bin', '/bin', '/usr/sbin', '/sbin'].map((d) => path.join(d, name)).find((p) => existsSync(p)) ??
    `/usr/bin/${name}`
  );
}

const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The argv that runs `command` fenced off for the app: it joins the app's cgroups (when
 * in force) and drops to the app's uid and gid, with no supplementary groups but `extraGids`
 * and no way to regain privileges, before exec. Spawn it as is (no shell of yours around it).
 *
 * `binds` (with mount namespaces): the command runs in a private mount namespace
 * (`unshare --mount --propagation private`, no fork: the pid stays the spawned one) where
 * each source is bind-mounted at its target before privileges drop; a missing target is
 * created first (an empty root-owned directory on the host: a bind needs a mount point).
 * Nothing is mounted outside that namespace. `umask` sets the command's file mode mask.
 */
export function isolatedArgv(
  iso: Isolation,
  options: {
    owner: SandboxOwner;
    uid: number;
    extraGids?: number[];
    binds?: BindMount[];
    umask?: number;
    view?: SandboxView;
  },
  command: string[],
): string[] {
  if (!iso.uidSwitch) return command;
  const { view } = options;
  if (view && viewApplies(iso, view)) {
    // bubblewrap, run by the app's uid, makes the mounts itself: nothing to mount as root
    const seccomp = iso.seccomp ? ['--seccomp', String(VIEW_SECCOMP_FD)] : [];
    const inside = [BWRAP, ...viewArgs(view, options.binds ?? [], VIEW_INFO_FD), ...seccomp, '--', ...command];
    return isolatedArgv({ ...iso, mountNamespaces: false }, { ...options, view: undefined }, inside);
  }
  const steps = iso.cgroups
    ? (['memory', 'cpu'] as const).map(
        (c) => `echo $$ > ${shq(path.join(groupDir(iso, c, options.owner), 'cgroup.procs'))}`,
      )
    : [];
  const binds = iso.mountNamespaces ? (options.binds ?? []) : [];
  for (const b of binds)
    steps.push(`${sysBin('mkdir')} -p ${shq(b.target)}`, `${sysBin('mount')} --bind ${shq(b.source)} ${shq(b.target)}`);
  if (options.umask !== undefined) steps.push(`umask ${options.umask.toString(8).padStart(4, '0')}`);
  const groups =
    options.extraGids && options.extraGids.length > 0 ? ['--groups', options.extraGids.join(',')] : ['--clear-groups'];
  const drop = [
    sysBin('setpriv'),
    '--reuid',
    String(options.uid),
    '--regid',
    String(options.uid),
    ...groups,
    '--no-new-privs',
    '--inh-caps=-all',
    '--',
  ];
  const shell = ['/bin/sh', '-c', [...steps, 'exec "$@"'].join(' && '), 'berth-isolate', ...drop, ...command];
  return binds.length > 0 ? [sysBin('unshare'), '--mount', '--propagation', 'private', '--', ...shell] : shell;
}

/** Debian's bubblewrap. */
export const BWRAP = '/usr/bin/bwrap';

/** Whether a workload asking for `view` gets it here (root, and bubblewrap works). */
export const viewApplies = (iso: Isolation, view: SandboxView | undefined): boolean =>
  Boolean(view && iso.uidSwitch && iso.view);
/** The descriptor bubblewrap writes the sandbox's pid to (`{"child-pid": N}`): the launcher opens it. */
export const VIEW_INFO_FD = 3;
/** The descriptor bubblewrap reads the seccomp filter from: the launcher opens the compiled filter there. */
export const VIEW_SECCOMP_FD = 4;

/** What app code sees besides the system's read-only folders: where it may write, where it starts. */
export interface SandboxView {
  /** Folders bound read-write at their own path (the release, the app's home). */
  writable: string[];
  cwd: string;
  /** Seen as /etc/resolv.conf (the workload network's resolver); absent: the machine's. */
  resolvConf?: string;
}

/** The top-level system folders, as they are on this machine: merged-/usr links stay links. */
function systemFolders(): string[] {
  const args: string[] = ['--ro-bind', '/usr', '/usr', '--ro-bind', '/etc', '/etc'];
  for (const dir of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    const st = lstatSync(dir, { throwIfNoEntry: false });
    if (st?.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else if (st?.isDirectory()) args.push('--ro-bind', dir, dir);
  }
  return args;
}

/**
 * bubblewrap's arguments for a view: new user, PID, IPC and UTS namespaces, its own /proc, a minimal /dev, a private /tmp, the
 * system's folders read-only, the writable folders and the volume binds, no capabilities,
 * a session of its own.
 */
function viewArgs(view: SandboxView, binds: BindMount[], infoFd?: number): string[] {
  return [
    // the network is the launcher's business; the cgroup stays visible as it is (its limits are the app's)
    '--unshare-user',
    '--unshare-ipc',
    '--unshare-pid',
    '--unshare-uts',
    // a session and process group of its own: the launcher signals it apart from bwrap itself
    '--new-session',
    ...(infoFd === undefined ? [] : ['--info-fd', String(infoFd)]),
    '--cap-drop',
    'ALL',
    ...systemFolders(),
    ...(view.resolvConf ? ['--ro-bind', view.resolvConf, '/etc/resolv.conf'] : []),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
    ...view.writable.flatMap((dir) => ['--bind', dir, dir]),
    ...binds.flatMap((b) => ['--bind', b.source, b.target]),
    '--chdir',
    view.cwd,
  ];
}

/**
 * Variables that change what a program does before it runs a line of its own (the dynamic
 * loader's, glibc's, the shell's). The root part of an isolated command (the shell that joins
 * the cgroups, unshare, mount, setpriv) must never see an app's values of these: an app
 * variable `LD_PRELOAD=<release>/x.so` would otherwise run the app's code as root.
 */
const LOADER_VARIABLE =
  /^(LD_.*|MALLOC_.*|GLIBC_TUNABLES|GCONV_PATH|LOCPATH|NLSPATH|HOSTALIASES|RES_OPTIONS|LOCALDOMAIN|TZDIR|BASH_ENV|ENV|SHELLOPTS|PS4|IFS)$/;
const KEPT_PREFIX = 'BERTH_KEEP_';

/**
 * `isolatedArgv` for a command that runs with an app's own environment: the loader and
 * shell variables of `env` travel renamed (`BERTH_KEEP_<name>`) through the root part and are
 * put back by a shell running as the app's uid, right before the command.
 */
export function isolatedCommand(
  iso: Isolation,
  options: Parameters<typeof isolatedArgv>[1],
  command: string[],
  env: Record<string, string>,
): { argv: string[]; env: Record<string, string> } {
  if (!iso.uidSwitch) return { argv: isolatedArgv(iso, options, command), env };
  const safe: Record<string, string> = {};
  const kept: string[] = [];
  for (const [key, value] of Object.entries(env)) {
    if (!LOADER_VARIABLE.test(key)) safe[key] = value;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) {
      safe[`${KEPT_PREFIX}${key}`] = value;
      kept.push(key);
    }
  }
  const restore = kept.map((k) => `export ${k}="$${KEPT_PREFIX}${k}"; unset ${KEPT_PREFIX}${k}`);
  const asApp =
    kept.length > 0 ? ['/bin/sh', '-c', [...restore, 'exec "$@"'].join('; '), 'berth-env', ...command] : command;
  return { argv: isolatedArgv(iso, options, asApp), env: safe };
}
