import { execFile } from 'node:child_process';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { ApplicationFailure } from '@temporalio/common';
import type { AppMount } from '../../../../platform/drivers/apps';
import type { LocalLayout } from '../../../../platform/local-layout';
import { BWRAP, type BindMount } from '../sandbox/isolation';
import { SETFACL } from './runtime';

const exec = promisify(execFile);

/**
 * A container's way into a storage volume. A container runs as ids of its app's range (its
 * root the range's first, `--uidmap 0:<base>:65536`), and podman 4.3 cannot map the
 * volume's group beside them (measured: the container's overlay mount then fails), so the
 * supplementary group that process replicas get (apps/volumes.ts) is no way in here.
 * Instead the mounted folder and everything in it get a POSIX ACL entry for each id the
 * container runs as (its root's, its image USER's), as an access entry and as a default
 * one: what anyone creates in it later carries the entry too, and what the container
 * creates stays read-write for the volume's group (a default ACL overrides the container's
 * umask). Idempotent.
 *
 * The walk runs setfacl as root in a mount namespace that shows nothing of the machine but
 * the volume and /usr read-only (bubblewrap, no user namespace: root's capabilities are
 * kept), and the sub path is followed inside it: a link an app left in the volume, or
 * swaps in during the walk, leads nowhere outside it.
 */
export async function grantVolumeTo(uids: number[], volumeRoot: string, subPath: string | null): Promise<void> {
  const argv = [
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-net',
    '--unshare-uts',
    '--die-with-parent',
    '--bind',
    volumeRoot,
    '/volume',
    '--ro-bind',
    '/usr',
    '/usr',
    ...['lib', 'lib64', 'bin', 'sbin'].flatMap((d) => ['--symlink', `usr/${d}`, `/${d}`]),
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--',
    SETFACL,
    '--recursive',
    '--physical',
    '--modify',
    uids.map((uid) => `user:${uid}:rwX,default:user:${uid}:rwX`).join(','),
    path.posix.join('/volume', ...segments(subPath)),
  ];
  try {
    await exec(BWRAP, argv, { timeout: 10 * 60_000 });
  } catch (err) {
    const why = String((err as { stderr?: string }).stderr ?? '').trim() || (err as Error).message;
    throw ApplicationFailure.nonRetryable(
      `the storage volume cannot be opened to the container (uids ${uids.join(', ')}): ${why}`,
      'LocalVolumeGrantFailed',
    );
  }
}

/** A sub path's folders (what ensureVolumeSubPath made): no `.`, `..` or empty segments. */
const segments = (subPath: string | null) => (subPath ?? '').split('/').filter((s) => s && s !== '.' && s !== '..');

/**
 * The container's volume mounts, each folder opened to its ids (`uids`) first. podman resolves a
 * mount's source as root, so just before it is handed over the source must still resolve
 * inside its volume (a sub path an app swapped for a link is refused). An app that swaps it
 * between this check and `podman run` is the race left (docs/decisions.md).
 */
export async function containerMounts(layout: LocalLayout, uids: number[], mounts: AppMount[]): Promise<BindMount[]> {
  const out: BindMount[] = [];
  for (const m of mounts) {
    const root = layout.volumeDir(m.volumeId);
    await grantVolumeTo(uids, root, m.subPath);
    const source = path.join(root, ...segments(m.subPath));
    const [real, realRoot] = await Promise.all([realpath(source), realpath(root)]);
    if (real !== realRoot && !real.startsWith(`${realRoot}/`))
      throw ApplicationFailure.nonRetryable(
        `sub_path ${m.subPath} of volume ${m.volumeId} leads out of the volume`,
        'VolumeSubPathBlocked',
      );
    out.push({ source: real, target: m.mountPath });
  }
  return out;
}
