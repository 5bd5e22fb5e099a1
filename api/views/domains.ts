import { VERIFICATION_STATUSES } from '../../domain/domains';
import { obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import type { CustomDomain } from '../../entities/domain';
import { isoRequired } from './common';

export const domainSchema = obj({
  uuid: uuid().required(),
  name: str().required(),
  dns_target: str().defined(),
  verification_status: oneOf(VERIFICATION_STATUSES).required(),
  verification_token: str().defined(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
});

/** The contract's Custom domain: dns_target and verification_token are empty strings while unset. */
export function domainView(d: CustomDomain) {
  return {
    uuid: d.uuid,
    name: d.name,
    dns_target: d.dns_target ?? '',
    verification_status: d.verification_status,
    verification_token: d.verification_token ?? '',
    created_at: isoRequired(d.created_at),
    updated_at: isoRequired(d.updated_at),
  };
}
