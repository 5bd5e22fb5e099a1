import { existsSync } from 'node:fs';

/** The image runtime's binaries (Debian's podman, runc and catatonit packages), by absolute path. */
export const PODMAN = '/usr/bin/podman';
export const RUNC = '/usr/sbin/runc';
/** The init `podman run --init` starts as a container's pid 1 (reaps zombies, passes signals on). */
export const CATATONIT = '/usr/bin/catatonit';
/** Grants a container's uid its way into a storage volume (volume-grants.ts). */
export const SETFACL = '/usr/bin/setfacl';

/** The Debian packages the image runtime needs, each found by its binary. */
export const IMAGE_RUNTIME_PACKAGES = [
  { pkg: 'podman', binary: PODMAN },
  { pkg: 'runc', binary: RUNC },
  { pkg: 'catatonit', binary: CATATONIT },
  { pkg: 'acl', binary: SETFACL },
] as const;

/**
 * Why this machine runs no container images (null: it does): Berth not root (podman runs
 * rootful: the containers' uids are the apps' own), or the missing Debian packages, by name. `npm start` installs them as root on Debian (bin/machine-packages.ts).
 */
export function imageRuntimeRefusal(
  exists: (file: string) => boolean = existsSync,
  root = process.getuid?.() === 0,
): string | null {
  if (!root) return 'the local driver runs container images with podman as root, and Berth does not run as root';
  const missing = IMAGE_RUNTIME_PACKAGES.filter((p) => !exists(p.binary)).map((p) => p.pkg);
  if (missing.length === 0) return null;
  return `the local driver runs container images with podman, and this machine lacks Debian's ${missing.join(', ')} package${missing.length === 1 ? '' : 's'}: install ${missing.length === 1 ? 'it' : 'them'} as root (npm start does so on first start when it runs as root)`;
}
