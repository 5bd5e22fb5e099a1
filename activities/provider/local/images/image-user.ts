import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Isolation } from '../sandbox/isolation';
import type { PodmanConfig } from './config';
import { runPodman } from './podman';

/** A `USER` value: a number, or a name the image's /etc/passwd (or /etc/group) resolves. */
function idOf(value: string, table: string | null): number | null {
  if (/^\d+$/.test(value)) return Number(value);
  for (const line of (table ?? '').split('\n')) {
    const [name, , id] = line.split(':');
    if (name === value && id && /^\d+$/.test(id)) return Number(id);
  }
  return null;
}

/**
 * The uid an image's processes start as, inside the container (its `USER`: 0 when it sets
 * none; a name read from the image's own /etc/passwd, through a read-only mount of the
 * image). Null: a name the image does not resolve (podman then refuses to start it, and says
 * why). What a container's volumes are opened to (volume-grants.ts).
 */
export async function imageUid(iso: Isolation, cfg: PodmanConfig, image: string): Promise<number | null> {
  const inspected = await runPodman(iso, cfg, ['image', 'inspect', '--format', '{{.Config.User}}', image]);
  const user = (inspected.stdout.trim().split(':')[0] ?? '').trim();
  if (inspected.code !== 0 || user === '') return 0;
  if (/^\d+$/.test(user)) return Number(user);
  const mounted = await runPodman(iso, cfg, ['image', 'mount', image]);
  const root = mounted.stdout.trim();
  if (mounted.code !== 0 || !root) return null;
  try {
    const passwd = await readFile(path.join(root, 'etc', 'passwd'), 'utf8').catch(() => null);
    return idOf(user, passwd);
  } finally {
    await runPodman(iso, cfg, ['image', 'unmount', image]);
  }
}

/**
 * The host ids a container of `image` runs as (the app's range from `idBase`): its root's
 * and its USER's. What its volumes are opened to.
 */
export async function containerHostIds(
  iso: Isolation,
  cfg: PodmanConfig,
  image: string,
  idBase: number,
): Promise<number[]> {
  const uid = await imageUid(iso, cfg, image);
  return uid === null || uid === 0 ? [idBase] : [idBase, idBase + uid];
}
