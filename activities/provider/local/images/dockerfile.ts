import { PODMAN } from './runtime';

/** The file names a Dockerfile build looks for at the root of its context when the app names none. */
export const DOCKERFILE_NAMES = ['Dockerfile', 'Containerfile'] as const;

/**
 * Capabilities a RUN step does not get (of the runtime's default set, held only inside the
 * build's user namespace anyway): raw sockets, device nodes, audit records.
 */
export const BUILD_DROPPED_CAPS = ['NET_RAW', 'MKNOD', 'AUDIT_WRITE'] as const;

/** How one Dockerfile is built (what `podman build` is told, inside the app's build namespace: build-space.ts). */
export interface DockerfileBuildSpec {
  /** The build context: the checked-out folder. */
  context: string;
  /** The Dockerfile, an absolute path inside the context. */
  dockerfile: string;
  /** The name the built image gets (`localhost/berth/<app>:<release>`). */
  tag: string;
  /** The resolver RUN steps are given (the workload network's gateway); absent: podman's default. */
  dns?: string;
  /** The build's own auth file: the workspace's logins for the registries its FROM lines name, never a login of the machine's. */
  authFile: string;
}

/**
 * `podman build` of a commit's Dockerfile: each RUN step in a container of runc's (its own
 * processes, IPC and hostname, without the capabilities of BUILD_DROPPED_CAPS), on the
 * network podman itself is in (the launcher starts the build inside its own workload
 * namespace: out to the internet, nothing of the platform); layers cached in the app's
 * build storage.
 */
export function dockerfileBuildArgv(spec: DockerfileBuildSpec): string[] {
  const argv = [PODMAN, 'build', '--isolation', 'oci', '--network', 'host', '--pid', 'private', '--ipc', 'private'];
  if (spec.dns) argv.push('--dns', spec.dns);
  argv.push('--cap-drop', BUILD_DROPPED_CAPS.join(','));
  argv.push('--layers', '--force-rm', '--pull=missing', '--authfile', spec.authFile);
  argv.push('--file', spec.dockerfile, '--tag', spec.tag, spec.context);
  return argv;
}

/** How long an app's build cache keeps layers no build used since. */
export const BUILD_CACHE_HOURS = 7 * 24;

/** Removes the images and layers of the app's build storage older than BUILD_CACHE_HOURS. */
export function pruneBuildCacheArgv(): string[] {
  return [PODMAN, 'image', 'prune', '--all', '--force', '--filter', `until=${BUILD_CACHE_HOURS}h`];
}

/** Saves the built image to an archive Berth's podman loads (docker-archive: the tag travels with it). */
export function saveImageArgv(tag: string, archive: string): string[] {
  return [PODMAN, 'save', '--quiet', '--format', 'docker-archive', '--output', archive, tag];
}
