import { randomUUID } from 'node:crypto';
import { needsHostname, type RegistryProvider } from '../../domain/registries';
import { RegistryCredential } from '../../entities/registry-credential';
import { insertReturning, updateReturning } from '../../entities/sql';
import type { Caller } from '../context';
import { conflict, notFound, unprocessable } from '../problem';
import { snapshotOf, type Tx } from './audited-write';

export interface RegistryCredentialInput {
  name?: string;
  registry?: RegistryProvider;
  username?: string;
  token?: string;
  registry_hostname?: string | null;
}

function assertHostname(registry: RegistryProvider, hostname: string | null | undefined): void {
  if (needsHostname(registry) && !hostname) {
    throw unprocessable(`registry_hostname is required for registry ${registry}`, [
      { path: 'body.registry_hostname', message: `required for ${registry}` },
    ]);
  }
}

const duplicate = (name: string) =>
  conflict(`a container registry credential named "${name}" already exists in this workspace`);

/** POST /container_registry_credentials: the credential (names unique in the workspace), its token sealed. */
export async function createRegistryCredential(
  tx: Tx,
  caller: Caller,
  b: Required<Omit<RegistryCredentialInput, 'registry_hostname'>> & Pick<RegistryCredentialInput, 'registry_hostname'>,
): Promise<RegistryCredential> {
  assertHostname(b.registry, b.registry_hostname);
  // ON CONFLICT DO NOTHING: the uuid is fresh, so the one conflict possible is the name
  const credential = await insertReturning(
    tx.m,
    RegistryCredential,
    {
      uuid: randomUUID(),
      workspace_uuid: caller.workspaceUuid,
      name: b.name,
      registry: b.registry,
      username: b.username,
      registry_hostname: b.registry_hostname || null,
      token_sealed: tx.deps.secretBox.seal(b.token),
    },
    { ignoreConflict: true },
  );
  if (!credential) throw duplicate(b.name);
  await tx.audit({
    action: 'registry_credential.create',
    resourceUuid: credential.uuid,
    before: null,
    after: snapshotOf(credential),
  });
  return credential;
}

/** PUT /container_registry_credentials/{uuid}: fields left out keep their value; a sent token replaces the sealed one. */
export async function updateRegistryCredential(
  tx: Tx,
  caller: Caller,
  b: RegistryCredentialInput & { uuid: string },
): Promise<RegistryCredential> {
  const current = await tx.m.findOneBy(RegistryCredential, { uuid: b.uuid, workspace_uuid: caller.workspaceUuid });
  if (!current) throw notFound('container registry credential');
  const registry = (b.registry ?? current.registry) as RegistryProvider;
  const hostname = b.registry_hostname === undefined ? current.registry_hostname : b.registry_hostname || null;
  assertHostname(registry, hostname);
  if (b.name !== undefined && b.name !== current.name) {
    const taken = await tx.m.existsBy(RegistryCredential, { workspace_uuid: caller.workspaceUuid, name: b.name });
    if (taken) throw duplicate(b.name);
  }
  const updated = (await updateReturning(tx.m, RegistryCredential, current.uuid, {
    name: b.name,
    registry,
    username: b.username,
    registry_hostname: hostname,
    token_sealed: b.token === undefined ? undefined : tx.deps.secretBox.seal(b.token),
  }))!;
  await tx.audit({
    action: 'registry_credential.update',
    resourceUuid: current.uuid,
    before: snapshotOf(current),
    after: snapshotOf(updated),
  });
  return updated;
}
