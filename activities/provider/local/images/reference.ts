/**
 * Image references as Docker reads them: `[registry/]path[:tag][@digest]`, where the first
 * component is a registry when it has a dot or a port or is `localhost`; otherwise the
 * image is on Docker Hub (`docker.io`, single names under `library/`). Podman is always
 * handed the qualified form (no short-name lookups through the machine's registries.conf).
 */
export interface ImageReference {
  registry: string;
  /** The repository path in the registry (`acme/web`). */
  path: string;
  tag: string | null;
  digest: string | null;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

export function parseImageReference(ref: string): ImageReference {
  let rest = ref;
  let digest: string | null = null;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  let tag: string | null = null;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  const slash = rest.indexOf('/');
  const first = slash >= 0 ? rest.slice(0, slash) : '';
  const isRegistry = slash >= 0 && (first.includes('.') || first.includes(':') || first === 'localhost');
  const registry = isRegistry ? first : 'docker.io';
  let path = isRegistry ? rest.slice(slash + 1) : rest;
  if (registry === 'docker.io' && !path.includes('/')) path = `library/${path}`;
  return { registry, path, tag: tag ?? (digest ? null : 'latest'), digest };
}

/** `registry/path` (no tag, no digest). */
export function repositoryOf(ref: ImageReference): string {
  return `${ref.registry}/${ref.path}`;
}

/** The qualified reference podman is given. */
export function qualifiedImage(ref: ImageReference): string {
  return `${repositoryOf(ref)}${ref.tag ? `:${ref.tag}` : ''}${ref.digest ? `@${ref.digest}` : ''}`;
}

/** The reference pinned to one manifest: `registry/path@sha256:...` (what a release runs). */
export function pinnedImage(ref: ImageReference, digest: string): string {
  if (!DIGEST.test(digest)) throw new Error(`not an image digest: ${digest}`);
  return `${repositoryOf(ref)}@${digest}`;
}

/**
 * A registry on this machine's loopback (localhost, 127.0.0.0/8, [::1], any port) is reached
 * over plain HTTP, as Docker does; every other registry over verified TLS.
 */
export function isLoopbackRegistry(registry: string): boolean {
  const host = registryHost(registry);
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** A registry's host without its port (`[::1]:5000` -> `::1`, `reg.example:443` -> `reg.example`). */
export function registryHost(registry: string): string {
  return registry.startsWith('[') ? registry.slice(1, registry.indexOf(']')) : registry.split(':')[0]!;
}
