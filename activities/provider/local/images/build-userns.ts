import { readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cgroupName, type Isolation, type SandboxOwner } from '../sandbox/isolation';
import { launch, type Launched } from '../sandbox/launcher';
import { APP_ID_COUNT } from './id-range';

const NSENTER = '/usr/bin/nsenter';
const UNSHARE = '/usr/bin/unshare';
const SLEEP = '/bin/sleep';

/** How long a namespace holder lives at most (a build's own time limit ends it first). */
const HOLD_SECONDS = 6 * 3600;

const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** `sh -c` that joins the owner's memory and cpu cgroups (when in force) and execs the rest. */
function inGroup(iso: Isolation, owner: SandboxOwner, command: string[]): string[] {
  if (!iso.cgroups) return command;
  const joins = (['memory', 'cpu'] as const).map(
    (c) => `echo $$ > ${shq(path.join(iso.cgroupRoot, c, 'berth', cgroupName(owner), 'cgroup.procs'))}`,
  );
  return ['/bin/sh', '-c', [...joins, 'exec "$@"'].join(' && '), 'berth-build', ...command];
}

/**
 * A user namespace for one build: a process (in the build's cgroup, so the build's end kills
 * it) that holds a new user namespace whose ids 0..65535 are the host's idBase.. (written by
 * Berth, root, into its uid_map and gid_map: no /etc/subuid, no setuid helper). Commands
 * then enter it (inUserNamespace) as its root.
 */
export async function holdUserNamespace(
  iso: Isolation,
  owner: SandboxOwner,
  idBase: number,
): Promise<{ pid: number; holder: Launched }> {
  const holder = await launch(iso, {
    sandbox: null,
    command: inGroup(iso, owner, [UNSHARE, '--user', '--', SLEEP, String(HOLD_SECONDS)]),
    output: 'ignore',
  });
  const pid = holder.child.pid;
  if (!pid) throw new Error('the build namespace could not be made');
  const own = readlinkSync('/proc/self/ns/user');
  for (let i = 0; ; i++) {
    let ns: string | null = null;
    try {
      ns = readlinkSync(`/proc/${pid}/ns/user`);
    } catch {
      // not started yet, or ended
    }
    // past the shell and unshare(2): sleep runs in the new namespace
    if (ns && ns !== own && path.basename(readlinkSync(`/proc/${pid}/exe`)) === 'sleep') break;
    if (i > 400 || holder.child.exitCode !== null) {
      holder.kill('SIGKILL');
      throw new Error('the build namespace could not be made (unshare --user failed)');
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  writeFileSync(`/proc/${pid}/uid_map`, `0 ${idBase} ${APP_ID_COUNT}\n`);
  writeFileSync(`/proc/${pid}/gid_map`, `0 ${idBase} ${APP_ID_COUNT}\n`);
  return { pid, holder };
}

/**
 * The argv that runs `command` as root of the held user namespace (host ids: the range),
 * in the build's cgroup, in a mount namespace of its own with a /dev/shm of its own (podman's
 * locks there are the build's alone, not the machine podman's).
 */
export function inUserNamespace(iso: Isolation, owner: SandboxOwner, holderPid: number, command: string[]): string[] {
  return inGroup(iso, owner, [
    NSENTER,
    `--user=/proc/${holderPid}/ns/user`,
    '--setuid',
    '0',
    '--setgid',
    '0',
    '--',
    UNSHARE,
    '--mount',
    '--propagation',
    'private',
    '--',
    '/bin/sh',
    '-c',
    'mount -t tmpfs -o mode=1777,size=64m tmpfs /dev/shm && exec "$@"',
    'berth-build',
    ...command,
  ]);
}
