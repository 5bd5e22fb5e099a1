import type { EntityManager } from 'typeorm';
import { normalizeRepositoryUrl } from '../domain/git-urls';
import { RegistryCredential } from '../entities/registry-credential';
import type { ApiDeps } from './context';
import { unprocessable } from './problem';

/** The Git source rules of stacks and static sites: a repository URL Berth may clone, a stored credential. */

/** The repository URL as Berth clones it (domain/git-urls.ts); 422 at `body.<field>` otherwise. */
export function checkRepository(config: Pick<ApiDeps['config'], 'gitAllowFileUrls'>, value: string, field: string) {
  const r = normalizeRepositoryUrl(value, config.gitAllowFileUrls);
  if ('problem' in r) throw unprocessable(`${field} ${r.problem}`, [{ path: `body.${field}`, message: r.problem }]);
  return r.url;
}

/** credential_id, when given, must name a registry credential stored in the workspace; 422 otherwise. */
export async function checkCredential(
  m: EntityManager,
  workspaceUuid: string,
  credentialId: string | null | undefined,
): Promise<void> {
  if (!credentialId) return;
  if (!(await m.existsBy(RegistryCredential, { uuid: credentialId, workspace_uuid: workspaceUuid })))
    throw unprocessable('credential_id is not a stored credential of this workspace', [
      { path: 'body.credential_id', message: 'no such credential' },
    ]);
}
