import type { EntityManager } from 'typeorm';
import { CERTIFICATE_STATES } from '../../domain/certificates';
import { VERIFICATION_STATUSES } from '../../domain/domains';
import { DomainCertificate } from '../../entities/certificate';
import type { CustomDomain } from '../../entities/domain';
import { int, obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { iso, isoRequired } from './common';

const certificateSchema = obj({
  state: oneOf(CERTIFICATE_STATES).required(),
  issuer: str().nullable().defined(),
  not_before: timestamp().nullable().defined(),
  not_after: timestamp().nullable().defined(),
  renew_at: timestamp().nullable().defined(),
  attempts: int().required(),
  last_error: str().nullable().defined(),
  last_attempt_at: timestamp().nullable().defined(),
})
  .nullable()
  .defined();

export const domainSchema = obj({
  uuid: uuid().required(),
  name: str().required(),
  dns_target: str().defined(),
  verification_status: oneOf(VERIFICATION_STATUSES).required(),
  verification_token: str().defined(),
  certificate: certificateSchema,
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
});

/**
 * Where the domain's certificate stands (Berth's addition: the contract leaves the TLS
 * certificate record's fields open): null until Berth orders one (a verified domain, an
 * ACME directory configured); the certificate and its key are never shown.
 */
function certificateView(c: DomainCertificate | undefined) {
  if (!c) return null;
  return {
    state: c.state,
    issuer: c.issuer,
    not_before: iso(c.not_before),
    not_after: iso(c.not_after),
    renew_at: iso(c.renew_at),
    attempts: c.attempts,
    last_error: c.last_error,
    last_attempt_at: iso(c.last_attempt_at),
  };
}

/** The contract's Custom domain (dns_target and verification_token are empty strings while unset), with its certificate's status. */
export function domainView(d: CustomDomain, certificate?: DomainCertificate) {
  return {
    uuid: d.uuid,
    name: d.name,
    dns_target: d.dns_target ?? '',
    verification_status: d.verification_status,
    verification_token: d.verification_token ?? '',
    certificate: certificateView(certificate),
    created_at: isoRequired(d.created_at),
    updated_at: isoRequired(d.updated_at),
  };
}

/** The views of domains with their certificates' status (one query for all of them). */
export async function domainViews(m: EntityManager, domains: readonly CustomDomain[]) {
  const certificates =
    domains.length === 0
      ? []
      : await m
          .createQueryBuilder(DomainCertificate, 'c')
          .select([
            'c.domain_uuid',
            'c.state',
            'c.issuer',
            'c.not_before',
            'c.not_after',
            'c.renew_at',
            'c.attempts',
            'c.last_error',
            'c.last_attempt_at',
          ])
          .where('c.domain_uuid IN (:...uuids)', { uuids: domains.map((d) => d.uuid) })
          .getMany();
  const byDomain = new Map(certificates.map((c) => [c.domain_uuid, c]));
  return domains.map((d) => domainView(d, byDomain.get(d.uuid)));
}
