import { VERIFICATION_STATUSES } from '../../domain/domains';
import { obj, oneOf, str, timestamp, uuid } from '../schemas/common';
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

export interface DomainRow {
  uuid: string;
  app_uuid: string;
  name: string;
  verification_status: (typeof VERIFICATION_STATUSES)[number];
  verification_token: string | null;
  dns_target: string | null;
  created_at: Date;
  updated_at: Date;
}

export const DOMAIN_COLUMNS = 'uuid, app_uuid, name, verification_status, verification_token, dns_target, created_at, updated_at';

/** The contract's Custom domain: dns_target and verification_token are empty strings while unset. */
export function domainView(d: DomainRow) {
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
