import { DEFAULT_REGISTRY_HOST, type RegistryProvider } from '../domain/registries';
import { one, rows } from '../entities/sql';
import type { PullLogin, RegistryLogin } from '../platform/drivers/apps';
import type { ActivityDeps } from './deps';

/** A stored credential as these read it (its token still sealed). */
interface CredentialRow {
  registry: RegistryProvider;
  registry_hostname: string | null;
  username: string;
  token_sealed: string;
}

const CREDENTIAL_COLUMNS = 'registry, registry_hostname, username, token_sealed';

/** The host a credential logs in to: its registry_hostname, or its provider's own (null: neither). */
const serverOf = (row: CredentialRow): string | null =>
  row.registry_hostname ?? DEFAULT_REGISTRY_HOST[row.registry] ?? null;

/** A credential opened for a pull: its provider, and the login (`server` null: neither a registry_hostname nor a provider's own host). */
export type OpenedRegistryCredential = PullLogin & { registry: RegistryProvider };

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
): Promise<OpenedRegistryCredential | null> {
  const row = await one<CredentialRow>(
    deps.dataSource,
    `SELECT ${CREDENTIAL_COLUMNS} FROM container_registry_credentials WHERE uuid = $1 AND workspace_uuid = $2`,
    [credentialId, workspaceUuid],
  );
  if (!row) return null;
  const server = serverOf(row);
  return { registry: row.registry, server, username: row.username, token: deps.secretBox.open(row.token_sealed) };
}

/**
 * The workspace's registry credentials as logins, tokens opened, for a Dockerfile build
 * (its FROM lines may name private images): inside an activity, never an activity result.
 * The most recently changed first (for two credentials of one registry, the build uses it).
 * A credential whose registry has no host of its own and names none is left out.
 */
export async function openWorkspaceRegistryLogins(
  deps: Pick<ActivityDeps, 'dataSource' | 'secretBox'>,
  workspaceUuid: string,
): Promise<RegistryLogin[]> {
  const found = await rows<CredentialRow>(
    deps.dataSource,
    `SELECT ${CREDENTIAL_COLUMNS} FROM container_registry_credentials WHERE workspace_uuid = $1 ORDER BY updated_at DESC, uuid`,
    [workspaceUuid],
  );
  return found.flatMap((row) => {
    const server = serverOf(row);
    return server ? [{ server, username: row.username, token: deps.secretBox.open(row.token_sealed) }] : [];
  });
}
