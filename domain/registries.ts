/**
 * Container registry providers (contract: `generic` and seven provider values: a public
 * image hub, two code-host registries, two cloud-vendor registries, one cloud-hosting
 * registry, one image-hosting registry). Names are Berth's decision (docs/decisions.md).
 */
export const REGISTRY_PROVIDERS = [
  'generic',
  'docker_hub',
  'github',
  'gitlab',
  'aws_ecr',
  'google_artifact_registry',
  'digitalocean',
  'quay',
] as const;

export type RegistryProvider = (typeof REGISTRY_PROVIDERS)[number];

/** `generic` and the two cloud-vendor registries have no fixed host: registry_hostname is required. */
export const HOSTNAME_REQUIRED: readonly RegistryProvider[] = ['generic', 'aws_ecr', 'google_artifact_registry'];

export function needsHostname(registry: RegistryProvider): boolean {
  return HOSTNAME_REQUIRED.includes(registry);
}

/** A registry host: DNS name or IPv4 address with an optional port, no scheme or path. */
export const REGISTRY_HOSTNAME =
  /^(?=.{1,253}(:|$))[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:\d{1,5})?$/i;

/** The registry host each provider pulls from when registry_hostname is not given. */
export const DEFAULT_REGISTRY_HOST: Partial<Record<RegistryProvider, string>> = {
  docker_hub: 'docker.io',
  github: 'ghcr.io',
  gitlab: 'registry.gitlab.com',
  digitalocean: 'registry.digitalocean.com',
  quay: 'quay.io',
};
