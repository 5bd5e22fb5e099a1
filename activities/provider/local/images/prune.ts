import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { LocalLayout } from '../../../../platform/local-layout';
import type { ReleaseManifest } from '../contracts';
import type { Isolation } from '../sandbox/isolation';
import type { PodmanConfig } from './config';
import { runPodman } from './podman';
import { parseImageReference } from './reference';
import type { PlatformRegistry } from './registry';

/**
 * How many image releases of an app stay besides the serving and the pending one: the most
 * recent ones, what a rollback to a previous deployment needs.
 */
export const KEPT_IMAGE_RELEASES = 3;

export interface PruneDeps {
  layout: LocalLayout;
  isolation: Isolation;
  podman: PodmanConfig;
  registry: PlatformRegistry | null;
}

async function manifestsOf(layout: LocalLayout, appUuid: string): Promise<ReleaseManifest[]> {
  const dir = path.join(layout.appDir(appUuid), 'releases');
  const names = await readdir(dir).catch(() => [] as string[]);
  const out: ReleaseManifest[] = [];
  for (const name of names.filter((n) => n.endsWith('.json'))) {
    try {
      out.push(JSON.parse(await readFile(path.join(dir, name), 'utf8')) as ReleaseManifest);
    } catch {
      // half-written or gone: not counted
    }
  }
  return out;
}

/** Every image a release of any app on this machine names (a clone's releases name their parent's). */
async function imagesInUse(layout: LocalLayout): Promise<Set<string>> {
  const apps = await readdir(path.join(layout.appsRoot, 'apps')).catch(() => [] as string[]);
  const used = new Set<string>();
  for (const app of apps)
    for (const m of await manifestsOf(layout, app)) if (m.kind === 'image' && m.image) used.add(m.image);
  return used;
}

/** The image's id in podman's storage (null: not there). */
async function imageId(deps: PruneDeps, image: string): Promise<string | null> {
  const r = await runPodman(deps.isolation, deps.podman, ['image', 'inspect', '--format', '{{.Id}}', image]);
  return r.code === 0 ? r.stdout.trim() || null : null;
}

/** Deletes a manifest of the platform registry by its digest (its blobs go at the registry's garbage collection). */
async function deleteFromRegistry(registry: PlatformRegistry, image: string): Promise<void> {
  const ref = parseImageReference(image);
  if (ref.registry !== registry.host || !ref.digest) return;
  const auths = registry.authFile
    ? (JSON.parse(await readFile(registry.authFile, 'utf8')) as { auths: Record<string, { auth: string }> }).auths
    : {};
  const login = auths[registry.host]?.auth;
  await fetch(`http://${registry.host}/v2/${ref.path}/manifests/${ref.digest}`, {
    method: 'DELETE',
    headers: login ? { Authorization: `Basic ${login}` } : {},
  }).catch(() => null);
}

/**
 * Removes images no release names any more: from podman's storage (by id, only when no image
 * still in use has that id; never one a container uses) and from the platform registry;
 * then podman's dangling layers. Answers the images removed.
 */
export async function removeUnusedImages(deps: PruneDeps, candidates: string[]): Promise<string[]> {
  const used = await imagesInUse(deps.layout);
  const unused = [...new Set(candidates)].filter((i) => !used.has(i));
  if (unused.length === 0) return [];
  const usedIds = new Set<string>();
  for (const image of used) {
    const id = await imageId(deps, image);
    if (id) usedIds.add(id);
  }
  const removed: string[] = [];
  for (const image of unused) {
    const id = await imageId(deps, image);
    if (id && !usedIds.has(id)) {
      const r = await runPodman(deps.isolation, deps.podman, ['image', 'rm', id]);
      if (r.code === 0) removed.push(image);
    }
    if (deps.registry) await deleteFromRegistry(deps.registry, image);
  }
  await runPodman(deps.isolation, deps.podman, ['image', 'prune', '--force']);
  return removed;
}

/**
 * Prunes the app's image releases: the serving and pending ones (`inUse`) and the
 * KEPT_IMAGE_RELEASES most recent others stay; older ones lose their release (manifest and
 * folder) and, when nothing else names it, their image. Answers the release ids pruned.
 */
export async function pruneImageReleases(deps: PruneDeps, appUuid: string, inUse: string[]): Promise<string[]> {
  const images = (await manifestsOf(deps.layout, appUuid))
    .filter((m) => m.kind === 'image' && !inUse.includes(m.releaseId))
    .sort((a, b) => b.builtAt.localeCompare(a.builtAt));
  const old = images.slice(KEPT_IMAGE_RELEASES);
  for (const m of old) {
    await rm(deps.layout.releaseManifest(appUuid, m.releaseId), { force: true });
    await rm(deps.layout.releaseDir(appUuid, m.releaseId), { recursive: true, force: true });
  }
  await removeUnusedImages(deps, old.map((m) => m.image!).filter(Boolean));
  return old.map((m) => m.releaseId);
}
