import { execFile } from 'node:child_process';
import { chmod, chown, lstat, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { ApplicationFailure } from '@temporalio/common';
import type { AppMount } from '../../../../platform/drivers/apps';
import { appUid, type LocalLayout } from '../../../../platform/local-layout';
import { ensureRoots } from './dirs';
import type { BindMount, Isolation } from '../sandbox/isolation';

const exec = promisify(execFile);

/**
 * Storage volumes of the local driver (add-ons and services of type storage): one folder
 * each, `layout.volumeDir(<cluster id>)`. When Berth is root every volume has a group of its
 * own (gid `appUid(<cluster id>)`): the folder and its sub paths are 2770 root:<that gid>
 * (setgid: what is created inside keeps the group), apps that mount the volume get the gid
 * as a supplementary group and run with umask 0007, so every app mounting it reads and
 * writes what the others wrote, and no other app can enter it. See docs/decisions.md,
 * "Storage volumes and cron runs on the local driver".
 */
export const volumeGid = (volumeId: string) => appUid(volumeId);

/** The umask of an app that mounts volumes: files stay read-write for the volume's group. */
export const VOLUME_UMASK = 0o007;

/** Gives a folder of the volume to its group (root mode) or keeps it private to Berth's user. */
async function fence(iso: Isolation, dir: string, volumeId: string): Promise<void> {
  if (iso.uidSwitch) {
    await chown(dir, 0, volumeGid(volumeId));
    await chmod(dir, 0o2770);
  } else {
    await chmod(dir, 0o700);
  }
}

/** Creates the volume's folder if missing (idempotent); answers it. */
export async function ensureVolume(layout: LocalLayout, iso: Isolation, volumeId: string): Promise<string> {
  await ensureRoots(layout);
  const dir = layout.volumeDir(volumeId);
  await mkdir(dir, { recursive: true });
  await fence(iso, dir, volumeId);
  return dir;
}

/** Creates a sub path of the volume if missing (every folder on the way owned by its group); answers it. */
export async function ensureVolumeSubPath(
  layout: LocalLayout,
  iso: Isolation,
  volumeId: string,
  sub: string | null,
): Promise<string> {
  let dir = await ensureVolume(layout, iso, volumeId);
  for (const segment of (sub ?? '').split('/').filter((s) => s && s !== '.' && s !== '..')) {
    dir = path.join(dir, segment);
    // apps write in the volume: a link they left must not lead Berth (root) out of it
    const found = await lstat(dir).catch(() => null);
    if (found && (found.isSymbolicLink() || !found.isDirectory())) {
      throw ApplicationFailure.nonRetryable(
        `sub_path ${sub} of volume ${volumeId} is not a folder: ${segment} is a file or a link`,
        'VolumeSubPathBlocked',
      );
    }
    if (found) continue;
    const created = await mkdir(dir).then(
      () => true,
      (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
        return false;
      },
    );
    if (created) await fence(iso, dir, volumeId);
  }
  return dir;
}

/** Copies every file of one volume into another (clone_data); the copy belongs to the target's group. */
export async function copyVolume(
  layout: LocalLayout,
  iso: Isolation,
  sourceId: string,
  targetId: string,
): Promise<void> {
  const target = await ensureVolume(layout, iso, targetId);
  await exec('cp', ['-a', `${layout.volumeDir(sourceId)}/.`, target]).catch(
    (err: NodeJS.ErrnoException & { stderr?: string }) => {
      if (!String(err.stderr ?? '').includes('No such file')) throw err;
    },
  );
  if (iso.uidSwitch) {
    await exec('chgrp', ['-R', String(volumeGid(targetId)), target]);
    await exec('chmod', ['-R', 'g+rwX,o=', target]);
  }
}

/** `/data/uploads` -> `BERTH_MOUNT_DATA_UPLOADS`. */
export const mountVariable = (mountPath: string) =>
  `BERTH_MOUNT_${mountPath
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toUpperCase()}`;

/** How an app's processes get at its volumes: bind mounts, supplementary groups, a variable per mount. */
export interface VolumeAccess {
  binds: BindMount[];
  gids: number[];
  /** `BERTH_MOUNT_<PATH>`: where the volume is visible (the mount path, or its real folder without mount namespaces). */
  env: Record<string, string>;
  umask?: number;
}

/** Creates the app's volumes and sub paths if missing and answers how its processes reach them. */
export async function volumeAccess(layout: LocalLayout, iso: Isolation, mounts: AppMount[]): Promise<VolumeAccess> {
  const access: VolumeAccess = { binds: [], gids: [], env: {} };
  const namespaces = iso.uidSwitch && iso.mountNamespaces === true;
  for (const m of mounts) {
    const source = await ensureVolumeSubPath(layout, iso, m.volumeId, m.subPath);
    access.binds.push({ source, target: m.mountPath });
    if (iso.uidSwitch && !access.gids.includes(volumeGid(m.volumeId))) access.gids.push(volumeGid(m.volumeId));
    access.env[mountVariable(m.mountPath)] = namespaces ? m.mountPath : source;
  }
  if (mounts.length > 0) access.umask = VOLUME_UMASK;
  return access;
}

/**
 * Why a volume cannot be mounted at a path an app names here (null: it can): a compose
 * file's named volume needs its mount path for real, which takes Berth as root with mount
 * namespaces (a storage add-on's mount falls back to `BERTH_MOUNT_<PATH>` naming its folder).
 */
export function localVolumeMountRefusal(iso: Isolation): string | null {
  if (iso.uidSwitch && iso.mountNamespaces === true) return null;
  return iso.uidSwitch
    ? 'mounting a volume at its path needs mount namespaces (`unshare --mount`), which this machine refuses'
    : 'mounting a volume at its path needs Berth to run as root';
}
