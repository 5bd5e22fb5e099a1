import { obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { REGISTRY_PROVIDERS } from '../../domain/registries';
import { isoRequired } from './common';

export interface RegistryCredentialRow {
  uuid: string;
  name: string;
  registry: string;
  username: string;
  registry_hostname: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The SELECT list of a credential: never the sealed token. */
export const CREDENTIAL_COLUMNS = 'uuid, name, registry, username, registry_hostname, created_at, updated_at';

export const registryCredentialSchema = obj({
  uuid: uuid().required(),
  name: str().required(),
  registry: oneOf(REGISTRY_PROVIDERS).required(),
  username: str().defined(),
  registry_hostname: str().nullable().defined(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
});

/** An allow-list: the token is never copied. */
export function registryCredentialView(r: RegistryCredentialRow) {
  return {
    uuid: r.uuid,
    name: r.name,
    registry: r.registry,
    username: r.username,
    registry_hostname: r.registry_hostname,
    created_at: isoRequired(r.created_at),
    updated_at: isoRequired(r.updated_at),
  };
}
