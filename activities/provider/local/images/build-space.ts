import { chmod, chown, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { LocalLayout } from '../../../../platform/local-layout';
import { DEFAULT_ULIMITS, registriesConf, toml } from './config';
import { appIdBase } from './id-range';
import { RUNC } from './runtime';

/**
 * Where an app's Dockerfiles are built, and as whom. A Dockerfile's RUN steps are
 * strangers' code: the whole build (podman, buildah and the steps) runs as root of a user
 * namespace of its own whose 65536 ids are an unprivileged range of the host's, one per app
 * (id-range.ts), never the machine's root. Podman there has a storage of its own (the app's
 * build cache: no layer of another tenant's build is ever used) and runs the steps with runc
 * in namespaces of their own; the image it built is handed to Berth's podman as an archive.
 *
 * Why not `podman build --userns-uid-map` of the root podman: buildah 1.28 (Debian 12)
 * writes the layers with the host's ids (the image comes out owned by uid 1000000...) and
 * leaves a RUN step's `/` owned by the real root (docs/decisions.md).
 */

export interface BuildSpace {
  /** `<appsRoot>/image-builds/<app>`: root's, 0750, group the build root's (it reads the files, writes only below). */
  dir: string;
  /** The host uid (= gid) of the namespace's root. */
  idBase: number;
  /** The environment podman is given there (PATH, HOME, XDG_RUNTIME_DIR, TMPDIR, the configuration files). */
  env: Record<string, string>;
  /** Where a build's context is checked out to (owned by the build root). */
  context(deploymentUuid: string): string;
  /** Where a built image is saved for Berth's podman. */
  archive(deploymentUuid: string): string;
  /** The build's auth file (0600, the build root's): the registry logins its FROM lines need, removed with the build. */
  authFile(deploymentUuid: string): string;
}

export function buildSpace(layout: LocalLayout, appUuid: string): BuildSpace {
  const dir = path.join(layout.appsRoot, 'image-builds', appUuid);
  return {
    dir,
    idBase: appIdBase(appUuid),
    env: {
      PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: path.join(dir, 'home'),
      XDG_RUNTIME_DIR: path.join(dir, 'run'),
      // buildah's RUN bundles (else under the machine's /var/tmp)
      TMPDIR: path.join(dir, 'tmp'),
      CONTAINERS_CONF: path.join(dir, 'containers.conf'),
      CONTAINERS_STORAGE_CONF: path.join(dir, 'storage.conf'),
      CONTAINERS_REGISTRIES_CONF: path.join(dir, 'registries.conf'),
    },
    context: (deploymentUuid) => path.join(dir, 'contexts', deploymentUuid),
    archive: (deploymentUuid) => path.join(dir, 'out', `${deploymentUuid}.tar`),
    authFile: (deploymentUuid) => path.join(dir, 'home', `auth-${deploymentUuid}.json`),
  };
}

/** Podman inside the build namespace: no cgroups of its own (the build's cgroup holds it whole), runc, file events. */
function containersConf(dir: string): string {
  return [
    '# Written by Berth (activities/provider/local/images/build-space.ts).',
    '[containers]',
    'cgroups = "disabled"',
    `default_ulimits = ${toml(DEFAULT_ULIMITS)}`,
    '',
    '[engine]',
    'runtime = "runc"',
    'cgroup_manager = "cgroupfs"',
    'events_logger = "file"',
    `events_logfile_path = ${toml(path.join(dir, 'run', 'events.log'))}`,
    `tmp_dir = ${toml(path.join(dir, 'tmp'))}`,
    '',
    '[engine.runtimes]',
    `runc = ${toml([RUNC])}`,
    '',
  ].join('\n');
}

function storageConf(dir: string): string {
  return [
    '# Written by Berth (activities/provider/local/images/build-space.ts).',
    '[storage]',
    'driver = "overlay"',
    `graphroot = ${toml(path.join(dir, 'storage'))}`,
    `runroot = ${toml(path.join(dir, 'run', 'storage'))}`,
    '',
  ].join('\n');
}

/**
 * Where podman in the build namespace looks for image signatures: a folder of the space's
 * (`$HOME/.config/containers/registries.d`, read before the machine's /etc one). Without it,
 * podman, root in its namespace, reads the machine root's /var/lib/containers/sigstore,
 * which it may not open: every pull of a registry's image fails with "permission denied".
 */
function registriesD(dir: string): string {
  return [
    '# Written by Berth (activities/provider/local/images/build-space.ts).',
    'default-docker:',
    `  sigstore: ${JSON.stringify(`file://${path.join(dir, 'sigstore')}`)}`,
    '',
  ].join('\n');
}

/** Creates the app's build space (idempotent): the configuration files root's, the folders the build root's. */
export async function ensureBuildSpace(space: BuildSpace): Promise<void> {
  const parent = path.dirname(space.dir);
  await mkdir(parent, { recursive: true });
  await chmod(parent, 0o711);
  await mkdir(space.dir, { recursive: true });
  await chown(space.dir, 0, space.idBase);
  await chmod(space.dir, 0o750);
  for (const sub of ['home', 'run', 'tmp', 'storage', 'contexts', 'out']) {
    const d = path.join(space.dir, sub);
    await mkdir(d, { recursive: true });
    await chown(d, space.idBase, space.idBase);
    await chmod(d, 0o700);
  }
  const registriesDir = path.join(space.env.HOME!, '.config', 'containers', 'registries.d');
  await mkdir(registriesDir, { recursive: true, mode: 0o755 });
  const files: [string, string][] = [
    [space.env.CONTAINERS_CONF!, containersConf(space.dir)],
    [space.env.CONTAINERS_STORAGE_CONF!, storageConf(space.dir)],
    [space.env.CONTAINERS_REGISTRIES_CONF!, registriesConf()],
    [path.join(registriesDir, 'berth.yaml'), registriesD(space.dir)],
  ];
  for (const [file, text] of files) {
    if ((await readFile(file, 'utf8').catch(() => null)) !== text) await writeFile(file, text);
    await chown(file, 0, space.idBase);
    await chmod(file, 0o640);
  }
}

/** Removes what one build left in the space (its context, archive and auth file); the storage (the cache) stays. */
export async function clearBuild(space: BuildSpace, deploymentUuid: string): Promise<void> {
  await rm(space.authFile(deploymentUuid), { force: true });
  await rm(space.context(deploymentUuid), { recursive: true, force: true });
  await rm(space.archive(deploymentUuid), { force: true });
}
