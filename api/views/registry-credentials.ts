import { obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { REGISTRY_PROVIDERS } from '../../domain/registries';
import type { RegistryCredential } from '../../entities/registry-credential';
import { isoRequired } from './common';

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
export function registryCredentialView(r: RegistryCredential) {
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
