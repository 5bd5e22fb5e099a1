import { chown, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { RegistryLogin } from '../../../../platform/drivers/apps';
import type { LocalLayout } from '../../../../platform/local-layout';
import { imageReleaseManifest } from '../contracts';
import { authFileText, baseImages, loginsFor, pullBaseImageArgv, registryKey } from '../images/base-images';
import { buildSpace, clearBuild, ensureBuildSpace, type BuildSpace } from '../images/build-space';
import { holdUserNamespace, inUserNamespace } from '../images/build-userns';
import type { PodmanConfig } from '../images/config';
import { dockerfileBuildArgv, pruneBuildCacheArgv, saveImageArgv } from '../images/dockerfile';
import { podmanReason, runPodman } from '../images/podman';
import { publishImage } from '../images/publish';
import { parseImageReference, pinnedImage, qualifiedImage, type ImageReference } from '../images/reference';
import type { PlatformRegistry } from '../images/registry';
import { applyLimits, oomKills, type Isolation, type SandboxOwner } from '../sandbox/isolation';
import { SYSTEM_PATH, type Workload } from '../sandbox/launcher';
import { findDockerfile } from './detect';
import { BUILD_MEMBER, BuildFailed } from './steps';
import { registryRefusal } from '../images/registry-reach';
import type { AllowList } from '../../../../domain/webhook-destination';

/** What a Dockerfile build is given by the builder (builder.ts) that runs it. */
export interface DockerfileBuild {
  layout: LocalLayout;
  isolation: Isolation;
  podman: PodmanConfig | null;
  registry: PlatformRegistry | null;
  /** Private or loopback ranges a registry named with a login may be at (registry-reach.ts). */
  registryAllow: AllowList;
  /** The memory of the build's cgroup. */
  memoryBytes: number;
  appUuid: string;
  deploymentUuid: string;
  commitSha: string;
  /** The build's sandbox (its cgroup). */
  owner: SandboxOwner;
  releaseId: string;
  /** The checked-out tree (it becomes the build context; the folder is left empty). */
  releaseDir: string;
  /** The Dockerfile's path the app names ('' : Dockerfile, else Containerfile). */
  dockerfile: string;
  /** The workspace's registry logins (opened for this build): those of the registries the FROM lines name are used. */
  registryLogins: RegistryLogin[];
  /** Whether the build was cancelled or ran out of time (a failed step then says nothing more). */
  stopped(): boolean;
  /** Runs one step of the build (the builder's: its output in the log, a failure a BuildFailed). */
  step(step: Workload, what?: string): Promise<void>;
  log(text: string): void;
}

/**
 * A Dockerfile build (builder dockerfile, a stack's build.dockerfile): `podman build` of the
 * checked-out tree as root of a user namespace of the app's own (images/build-space.ts:
 * no real root anywhere in the build), in the build's network namespace and cgroup (its
 * limits hold podman and the RUN steps alike), its output in the build log. Berth's podman
 * loads the image; the release is its manifest, naming the image pinned to its digest (the
 * folder stays empty: the tree is in the image).
 */
export async function buildDockerfileRelease(b: DockerfileBuild): Promise<void> {
  const { podman, isolation: iso } = b;
  if (!podman || !iso.uidSwitch)
    throw new BuildFailed('this machine runs no container images: a Dockerfile cannot be built here');
  const found = findDockerfile(b.releaseDir, b.dockerfile);
  if ('reason' in found) throw new BuildFailed(found.reason);
  const bases = baseImages(await readFile(path.join(b.releaseDir, found.file), 'utf8'));
  applyLimits(iso, b.owner, { memoryBytes: b.memoryBytes, cpus: 2 });
  const space = buildSpace(b.layout, b.appUuid);
  await ensureBuildSpace(space);
  try {
    await buildInSpace(b, podman, found.file, bases, space);
  } finally {
    await clearBuild(space, b.deploymentUuid);
  }
}

/** The build's work in the app's build space (which buildDockerfileRelease clears afterwards). */
async function buildInSpace(
  b: DockerfileBuild,
  podman: PodmanConfig,
  dockerfile: string,
  bases: ImageReference[],
  space: BuildSpace,
) {
  const { isolation: iso, appUuid, deploymentUuid, releaseId, releaseDir, owner } = b;
  const context = space.context(deploymentUuid);
  const archive = space.archive(deploymentUuid);
  await clearBuild(space, deploymentUuid);
  await rename(releaseDir, context);
  await mkdir(releaseDir, { recursive: true, mode: 0o750 });
  const ids = `${space.idBase}:${space.idBase}`;
  await b.step({ sandbox: null, command: ['chown', '-R', ids, context], env: { PATH: SYSTEM_PATH } });
  const tag = `localhost/berth/${appUuid}:${releaseId.toLowerCase()}`;
  const logins = loginsFor(bases, b.registryLogins);
  const authFile = space.authFile(deploymentUuid);
  await writeFile(authFile, authFileText(logins), { mode: 0o600 });
  await chown(authFile, space.idBase, space.idBase);
  const { pid, holder } = await holdUserNamespace(iso, owner, space.idBase);
  const asBuildRoot = (command: string[]) => inUserNamespace(iso, owner, pid, command);
  try {
    await pullPrivateBases(b, bases, logins, authFile, asBuildRoot, space.env);
    b.log(`$ podman build --file ${dockerfile} .`);
    const argv = dockerfileBuildArgv({
      context,
      dockerfile: path.join(context, dockerfile),
      tag,
      dns: iso.network?.gateway,
      authFile,
    });
    try {
      await b.step(
        {
          sandbox: null,
          network: { name: `build-${deploymentUuid}`, member: BUILD_MEMBER, ephemeral: true },
          command: asBuildRoot(argv),
          cwd: context,
          env: space.env,
        },
        'podman build',
      );
    } catch (err) {
      if (err instanceof BuildFailed && !b.stopped() && oomKills(iso, owner) > 0)
        throw new BuildFailed(
          `the build ran out of memory (its limit is ${Math.round(b.memoryBytes / 2 ** 20)} MiB): the kernel killed a process of the build`,
        );
      throw err;
    }
    await b.step({ sandbox: null, command: asBuildRoot(saveImageArgv(tag, archive)), env: space.env }, 'podman save');
    // the app's build cache keeps a week of layers
    await b
      .step({ sandbox: null, command: asBuildRoot(pruneBuildCacheArgv()), env: space.env }, 'podman image prune')
      .catch((err: Error) => b.log(`the build cache was not pruned: ${err.message}`));
  } finally {
    holder.kill('SIGKILL');
  }
  const loaded = await runPodman(iso, podman, ['load', '--quiet', '--input', archive]);
  if (loaded.code !== 0) throw new BuildFailed(`could not load the built image: ${podmanReason(loaded)}`);
  const inspected = await runPodman(iso, podman, ['image', 'inspect', '--format', '{{.Digest}}', tag]);
  const digest = inspected.stdout.trim();
  if (inspected.code !== 0 || !digest)
    throw new BuildFailed(`built ${tag}, but could not read its digest: ${podmanReason(inspected)}`);
  let image = pinnedImage(parseImageReference(tag), digest);
  if (b.registry) {
    const published = await publishImage(iso, podman, b.registry, {
      from: image,
      appUuid,
      tag: releaseId.toLowerCase(),
      onLine: (line) => b.log(line),
    });
    if (!published.ok) throw new BuildFailed(published.reason);
    image = published.image;
  }
  const manifest = imageReleaseManifest({ releaseId, appUuid, commitSha: b.commitSha, stack: 'dockerfile', image });
  await writeFile(b.layout.releaseManifest(appUuid, releaseId), JSON.stringify(manifest, null, 2), { mode: 0o640 });
  b.log(`release ${releaseId} runs ${image}`);
}

/**
 * The base images on a registry the build has a login for are pulled first, with the
 * build's auth file, by the build's podman (as its namespace's root, in its cgroup) from the
 * machine's network, as a container_registry pull is: a registry the workspace stored a
 * credential for is reached like one (on the machine's loopback or network too), while the
 * RUN steps and every other FROM stay in the build's own network namespace. `podman build`
 * then finds them in its storage. A wrong login fails here, with the registry's reason.
 */
async function pullPrivateBases(
  b: DockerfileBuild,
  bases: ImageReference[],
  logins: RegistryLogin[],
  authFile: string,
  asBuildRoot: (command: string[]) => string[],
  env: Record<string, string>,
): Promise<void> {
  const hosts = new Set(logins.map((l) => registryKey(l.server)));
  for (const image of bases.filter((i) => hosts.has(registryKey(i.registry)))) {
    const refused = await registryRefusal(image.registry, b.registryAllow);
    if (refused) throw new BuildFailed(refused);
    b.log(`$ podman pull ${qualifiedImage(image)} (with the workspace's credential for ${image.registry})`);
    await b.step({ sandbox: null, command: asBuildRoot(pullBaseImageArgv(image, authFile)), env }, 'podman pull');
  }
}
