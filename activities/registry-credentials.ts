import { DEFAULT_REGISTRY_HOST, type RegistryProvider } from '../domain/registries';
import { one } from '../entities/sql';
import type { ActivityDeps } from './deps';

export interface RegistryAuth {
  registry: RegistryProvider;
  /** Host the image is pulled from: registry_hostname, or the provider's own. */
  server: string;
  username: string;
  token: string;
}

/**
 * Resolves `deployment_config.credential_id` for an image pull, inside an activity (apps
 * with deployment method container_registry): the workspace's credential with its token
 * opened. Not an activity itself: the token must never be an activity result (history).
 * Null when the id names no credential of that workspace.
 */
export async function openRegistryCredential(
  deps: Pick<ActivityDeps, 'dataSource' | 'secretBox'>,
  workspaceUuid: string,
  credentialId: string,
): Promise<RegistryAuth | null> {
  const row = await one<{
    registry: RegistryProvider;
    registry_hostname: string | null;
    username: string;
    token_sealed: string;
  }>(
    deps.dataSource,
    `SELECT registry, registry_hostname, username, token_sealed FROM container_registry_credentials WHERE uuid = $1 AND workspace_uuid = $2`,
    [credentialId, workspaceUuid],
  );
  if (!row) return null;
  const server = row.registry_hostname ?? DEFAULT_REGISTRY_HOST[row.registry];
  if (!server) return null;
  return { registry: row.registry, server, username: row.username, token: deps.secretBox.open(row.token_sealed) };
}
