import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { buildLogLine } from '../../../../platform/build-log';
import { releaseImage, type LocalLayout } from '../../../../platform/local-layout';
import type { BuildStatus, PullLogin } from '../../../../platform/drivers/apps';
import type { AppStateStore } from '../apps/state';
import { imageReleaseManifest } from '../contracts';
import type { Isolation } from '../sandbox/isolation';
import type { PodmanConfig } from './config';
import { publishImage } from './publish';
import { pullImage } from './pull';
import { parseImageReference } from './reference';
import { registryRefusal } from './registry-reach';
import type { AllowList } from '../../../../domain/webhook-destination';
import type { PlatformRegistry } from './registry';

/** The release an image becomes: one per digest and app (`image-<first 12 hex digits>`). */
export function imageReleaseId(digest: string): string {
  return `image-${digest.replace(/^sha256:/, '').slice(0, 12)}`;
}

/**
 * The `container_registry` deployments of the local driver: the "build" is a pull (in the
 * background; progress and outcome in the deployment's build log), and the release is a
 * manifest naming the image pinned to its digest. The outcome is settled in local_app_builds
 * like the driver's other settled builds; a pull a restart of Berth interrupted reads failed.
 */
export class ImagePulls {
  private readonly running = new Map<string, { cancelled: boolean }>();

  constructor(
    private readonly deps: {
      layout: LocalLayout;
      isolation: Isolation;
      podman: PodmanConfig;
      store: AppStateStore;
      /** Where release images are pushed (and run from); null: they run from podman's storage as pulled. */
      registry: PlatformRegistry | null;
      /** Private or loopback ranges a tenant's registry may be at (registry-reach.ts). */
      registryAllow: AllowList;
    },
  ) {}

  private marker(deploymentUuid: string): string {
    return path.join(this.deps.podman.dir, 'pulls', deploymentUuid);
  }

  /** Starts pulling (idempotent per deployment). */
  start(input: { appUuid: string; deploymentUuid: string; image: string; auth: PullLogin | null }): void {
    const { deploymentUuid } = input;
    if (this.running.has(deploymentUuid) || existsSync(this.marker(deploymentUuid))) return;
    mkdirSync(path.dirname(this.marker(deploymentUuid)), { recursive: true, mode: 0o700 });
    writeFileSync(this.marker(deploymentUuid), input.appUuid, { mode: 0o600 });
    const state = { cancelled: false };
    this.running.set(deploymentUuid, state);
    void this.pull(input, state).finally(() => this.running.delete(deploymentUuid));
  }

  /** The pull's progress, or null when this deployment is no pull of this driver. */
  status(deploymentUuid: string): BuildStatus | null {
    if (this.running.has(deploymentUuid)) return { status: 'building' };
    return existsSync(this.marker(deploymentUuid))
      ? { status: 'failed', reason: 'the image pull was interrupted by a restart of Berth' }
      : null;
  }

  /** Marks the pull cancelled (it settles as such when podman ends); answers whether it was one. */
  cancel(deploymentUuid: string): boolean {
    const state = this.running.get(deploymentUuid);
    if (state) state.cancelled = true;
    return Boolean(state) || existsSync(this.marker(deploymentUuid));
  }

  private log(deploymentUuid: string, line: string): void {
    const file = this.deps.layout.buildLogFile(deploymentUuid);
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    appendFileSync(file, buildLogLine(line), { mode: 0o600 });
  }

  private async pull(
    input: { appUuid: string; deploymentUuid: string; image: string; auth: PullLogin | null },
    state: { cancelled: boolean },
  ): Promise<void> {
    const { appUuid, deploymentUuid } = input;
    const settle = (outcome: { image: string } | { reason: string }) =>
      this.deps.store.settleBuild(deploymentUuid, appUuid, outcome);
    try {
      const outcome = await this.release(input, (line) => this.log(deploymentUuid, line), state);
      if (state.cancelled) return await settle({ reason: 'the deployment was cancelled' });
      await settle(outcome);
    } catch (err) {
      const reason = `the image pull failed: ${(err as Error).message}`;
      this.log(deploymentUuid, reason);
      await settle({ reason }).catch(() => {});
    }
  }

  /**
   * Pulls `image` and makes it a release of the app (pushed to the platform registry first,
   * when there is one): answers the release's image (`local-release:...`) or the reason.
   * What it does is told to `say`, line by line.
   */
  async release(
    input: { appUuid: string; image: string; auth: PullLogin | null },
    say: (line: string) => void,
    state: { cancelled: boolean } = { cancelled: false },
  ): Promise<{ image: string } | { reason: string }> {
    const { appUuid } = input;
    const refused = await registryRefusal(parseImageReference(input.image).registry, this.deps.registryAllow);
    if (refused) {
      say(`pull refused: ${refused}`);
      return { reason: refused };
    }
    const pulled = await pullImage(this.deps.isolation, this.deps.podman, {
      image: input.image,
      auth: input.auth,
      onLine: say,
    });
    if (!pulled.ok) {
      say(`pull failed: ${pulled.reason}`);
      return { reason: pulled.reason };
    }
    if (state.cancelled) return { reason: 'the deployment was cancelled' };
    const releaseId = imageReleaseId(pulled.digest);
    let image = pulled.image;
    if (this.deps.registry) {
      const published = await publishImage(this.deps.isolation, this.deps.podman, this.deps.registry, {
        from: pulled.image,
        appUuid,
        tag: releaseId,
        onLine: say,
      });
      if (!published.ok) {
        say(`push failed: ${published.reason}`);
        return { reason: published.reason };
      }
      image = published.image;
    }
    await this.writeRelease(appUuid, releaseId, image);
    say(`release ${releaseId} runs ${image}`);
    return { image: releaseImage(appUuid, releaseId) };
  }

  /** The release folder (empty: the image is in podman's storage) and its manifest, naming the pinned image. */
  private async writeRelease(appUuid: string, releaseId: string, image: string): Promise<void> {
    const { layout } = this.deps;
    await mkdir(layout.releaseDir(appUuid, releaseId), { recursive: true, mode: 0o750 });
    const manifest = imageReleaseManifest({ releaseId, appUuid, commitSha: null, stack: 'image', image });
    await writeFile(layout.releaseManifest(appUuid, releaseId), JSON.stringify(manifest, null, 2), { mode: 0o640 });
  }
}
