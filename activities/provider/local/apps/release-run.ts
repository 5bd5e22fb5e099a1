import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { imageReplicas } from '../images/replicas';
import type { AppRunSpec } from '../../../../platform/drivers/apps';
import type { ReleaseManifest } from '../contracts';
import { SYSTEM_PATH } from '../sandbox/launcher';
import type { AppsContext } from './context';
import { probesFor } from './health-probe';
import type { ReleaseRun } from './supervisor';
import { networkMember } from './network-member';
import { mountVariable, volumeAccess } from './volumes';
import { containerMounts } from '../images/volume-grants';
import { containerHostIds } from '../images/image-user';
import { appIdBase } from '../images/id-range';

/**
 * How one release of the app runs (an image release: as containers of its pinned image, with
 * the run spec's variables as they are) with the run spec the control plane handed over: its
 * directory, the release's PATH entries before the environment's, HOME and TMPDIR in the
 * app's home, its volumes, its quota as limits and its probes.
 */
export async function releaseRun(
  ctx: AppsContext,
  appUuid: string,
  releaseId: string,
  manifest: ReleaseManifest,
  spec: AppRunSpec,
): Promise<ReleaseRun> {
  ctx.runtime(appUuid).webPort = spec.internalPort;
  const releaseDir = ctx.layout.releaseDir(appUuid, releaseId);
  const home = ctx.layout.homeDir(appUuid);
  const pathDirs = manifest.path.map((p) => path.join(releaseDir, p));
  const volumes = await volumeAccess(ctx.layout, ctx.isolation, spec.mounts);
  const { env } = spec;
  const image = manifest.kind === 'image' ? manifest.image : null;
  if (image && !ctx.podman)
    throw ApplicationFailure.nonRetryable(
      `release ${releaseId} is an image, and images do not run here`,
      'LocalImageRefused',
    );
  const idBase = image && ctx.isolation.uidSwitch ? appIdBase(appUuid) : null;
  // volumeAccess made the folders; the container's root and the image's USER are given their way into them
  const mounts =
    image && ctx.podman && idBase !== null && spec.mounts.length > 0
      ? await containerMounts(ctx.layout, await containerHostIds(ctx.isolation, ctx.podman, image, idBase), spec.mounts)
      : volumes.binds;
  const container =
    image && ctx.podman
      ? imageReplicas(ctx.isolation, ctx.podman, {
          appUuid,
          releaseId,
          image,
          // in a container a volume is always at its mount path
          env: { ...env, ...Object.fromEntries(spec.mounts.map((m) => [mountVariable(m.mountPath), m.mountPath])) },
          memoryBytes: spec.ramSize,
          cpus: spec.cpuSize,
          idBase,
          mounts,
          onDropped: (names) =>
            ctx.log.berth(appUuid, `not passed to the container (podman reads them itself): ${names.join(', ')}`),
        })
      : undefined;
  return {
    container,
    appUuid,
    releaseId,
    releaseDir,
    manifest,
    limits: { memoryBytes: spec.ramSize, cpus: spec.cpuSize },
    view: { writable: [releaseDir, home], cwd: releaseDir },
    volumes,
    replicas: Math.max(1, spec.replicas),
    probes: probesFor(spec.healthChecks, spec.internalPort),
    port: spec.internalPort,
    member: networkMember(appUuid, spec),
    vpcs: spec.network?.vpcs ?? [],
    env: { ...env, ...volumes.env, PATH: [...pathDirs, env.PATH ?? SYSTEM_PATH].join(':'), HOME: home, TMPDIR: home },
  };
}
