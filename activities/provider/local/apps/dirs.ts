import { chmod, chown, mkdir } from 'node:fs/promises';
import { appUid, type LocalLayout } from '../../../../platform/local-layout';
import type { Isolation } from '../sandbox/isolation';

/**
 * Creates the folders the local driver needs, with owners and modes that keep app code
 * away from Berth's data and from other apps (idempotent):
 *   privateRoot          0700 Berth's user (git repositories, logs, state)
 *   appsRoot, apps/      0711 (others may pass through, not list)
 *   apps/<uuid>          0750 root:<app gid> (only the app's own processes enter)
 *   apps/<uuid>/home     0700 <app uid> (HOME and TMPDIR of its builds and replicas)
 *   apps/<uuid>/releases 0750 root:<app gid>
 */
export async function ensureAppDir(layout: LocalLayout, iso: Isolation, appUuid: string): Promise<void> {
  await ensureRoots(layout);
  const dir = layout.appDir(appUuid);
  const uid = appUid(appUuid);
  await mkdir(`${dir}/releases`, { recursive: true });
  await mkdir(layout.homeDir(appUuid), { recursive: true });
  if (iso.uidSwitch) {
    await chown(dir, 0, uid);
    await chown(`${dir}/releases`, 0, uid);
    await chown(layout.homeDir(appUuid), uid, uid);
  }
  await chmod(dir, 0o750);
  await chmod(`${dir}/releases`, 0o750);
  await chmod(layout.homeDir(appUuid), 0o700);
}

export async function ensureRoots(layout: LocalLayout): Promise<void> {
  await mkdir(layout.privateRoot, { recursive: true, mode: 0o700 });
  await chmod(layout.privateRoot, 0o700);
  for (const dir of [layout.appsRoot, `${layout.appsRoot}/apps`, `${layout.appsRoot}/volumes`]) {
    await mkdir(dir, { recursive: true });
    await chmod(dir, 0o711);
  }
}
