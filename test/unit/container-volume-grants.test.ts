import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { detectIsolation } from '../../activities/provider/local/sandbox/isolation';
import { ensureVolumeSubPath, volumeGid } from '../../activities/provider/local/apps/volumes';
import { containerMounts } from '../../activities/provider/local/images/volume-grants';
import { SETFACL } from '../../activities/provider/local/images/runtime';
import { appUid } from '../../platform/local-layout';
import { tempLayout } from '../support/local-apps';

/**
 * Storage volumes opened to a container's uid (issue 27): a container runs as its app's uid
 * alone, so the volume's folder gets a POSIX ACL entry for it (volume-grants.ts). Proved as
 * a tenant would meet it: the container's uid reads and writes what another app wrote, what
 * it writes stays read-write for the volume's group, and a link a tenant left in the volume
 * (to a folder of the machine) never carries the grant out of it.
 */

const iso = detectIsolation();
const missing = !iso.uidSwitch
  ? 'the grants are made as root'
  : !existsSync(SETFACL)
    ? "Debian's acl package (setfacl) is not installed"
    : !existsSync('/usr/bin/bwrap')
      ? 'bubblewrap is not installed'
      : null;
if (missing) console.warn(`container volume grants skipped: ${missing}`);
const describeRoot = missing ? describe.skip : describe;

/** Where the tests see a mounted folder (as a container or a process replica has it bind-mounted). */
const MOUNT_POINT = mkdtempSync(path.join(tmpdir(), 'berth-mnt-'));
chmodSync(MOUNT_POINT, 0o755);

/**
 * Runs shell `script` as `uid` with only `gids` (setpriv) in a mount namespace where
 * `folder` is bind-mounted at MOUNT_POINT (null: the machine's view): its output, or the
 * error's first line.
 */
function as(uid: number, gids: number[], script: string, folder: string | null = null): string {
  const setpriv = [
    'setpriv',
    '--reuid',
    String(uid),
    '--regid',
    String(gids[0] ?? uid),
    ...(gids.length > 1 ? ['--groups', gids.slice(1).join(',')] : ['--clear-groups']),
    '--',
    'sh',
    '-c',
    script,
  ];
  try {
    return execFileSync(
      'unshare',
      folder
        ? [
            '--mount',
            '--propagation',
            'private',
            '--',
            'sh',
            '-c',
            'mount --bind "$0" "$1" && shift && exec "$@"',
            folder,
            MOUNT_POINT,
            ...setpriv,
          ]
        : setpriv,
      { encoding: 'utf8', stdio: 'pipe' },
    );
  } catch (err) {
    return `refused: ${String((err as { stderr?: string }).stderr ?? '').split('\n')[0]}`;
  }
}

const aclOf = (file: string) => execFileSync('getfacl', ['--numeric', '--absolute-names', file], { encoding: 'utf8' });

describeRoot('storage volumes opened to a container uid (setfacl in a sandbox)', () => {
  const temp = tempLayout();
  const volumeId = `vol-${randomBytes(4).toString('hex')}`;
  const container = appUid(`container-${volumeId}`);
  const processApp = appUid(`process-${volumeId}`);
  const gid = volumeGid(volumeId);
  const outside = mkdtempSync(path.join(tmpdir(), 'berth-outside-'));

  afterAll(() => {
    temp.cleanup();
    rmSync(outside, { recursive: true, force: true });
    rmSync(MOUNT_POINT, { recursive: true, force: true });
  });

  it("the container's uid reads and writes what a process app wrote; what it writes stays the group's", async () => {
    const dir = await ensureVolumeSubPath(temp.layout, iso, volumeId, 'shared');
    const m = MOUNT_POINT;
    // a process app of the volume's group wrote a file (umask 0007, as process replicas run)
    expect(as(processApp, [processApp, gid], `umask 007; echo from-process > ${m}/note`, dir)).toBe('');
    expect(as(container, [container], `cat ${m}/note`, dir)).toMatch(/^refused/);

    const mounts = await containerMounts(
      temp.layout,
      [container],
      [{ volumeId, subPath: 'shared', mountPath: '/data' }],
    );
    expect(mounts).toEqual([{ source: dir, target: '/data' }]);
    expect(as(container, [container], `cat ${m}/note`, dir)).toBe('from-process\n');
    // the container's files (its own umask 0022) stay read-write for the volume's group
    expect(as(container, [container], `umask 022; mkdir ${m}/sub; echo from-container > ${m}/sub/reply`, dir)).toBe('');
    expect(as(processApp, [processApp, gid], `echo appended >> ${m}/sub/reply; cat ${m}/sub/reply`, dir)).toBe(
      'from-container\nappended\n',
    );
    // an app of neither (no group, no entry) is still kept out
    const other = appUid(`other-${volumeId}`);
    expect(as(other, [other], `cat ${m}/note`, dir)).toMatch(/^refused/);
  });

  it('a link a tenant left in the volume carries no grant out of it; a sub path that is a link is refused', async () => {
    mkdirSync(path.join(outside, 'secret'));
    writeFileSync(path.join(outside, 'secret', 'key'), 'machine secret\n');
    chmodSync(path.join(outside, 'secret'), 0o700);
    chownSync(path.join(outside, 'secret', 'key'), 0, 0);
    const dir = await ensureVolumeSubPath(temp.layout, iso, volumeId, 'links');
    // the tenant's links: one inside the mounted folder, one standing in for a sub path
    symlinkSync(path.join(outside, 'secret'), path.join(dir, 'escape'));
    symlinkSync(path.join(outside, 'secret'), path.join(temp.layout.volumeDir(volumeId), 'swapped'));

    await containerMounts(temp.layout, [container], [{ volumeId, subPath: 'links', mountPath: '/data' }]);
    await expect(
      containerMounts(temp.layout, [container], [{ volumeId, subPath: 'swapped', mountPath: '/data' }]),
    ).rejects.toThrow(/leads out of the volume/);
    for (const file of [path.join(outside, 'secret'), path.join(outside, 'secret', 'key')])
      expect(aclOf(file)).not.toContain(`user:${container}:`);
    expect(as(container, [container], `cat ${path.join(outside, 'secret', 'key')}`)).toMatch(/^refused/);
  });
});
