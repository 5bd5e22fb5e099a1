/**
 * Certificates Berth obtains by ACME for custom domains: their states and when one is renewed.
 * `pending`: not ordered yet; `issuing`: an order is open; `issued`: a certificate is
 * served; `failed`: the last order failed (its reason is on the domain) and is retried,
 * while a certificate obtained before, if any, is still served.
 */
/** The operation name (first part of the workflow id `domain-certificate/<domain uuid>`) of a domain's certificate workflow. */
export const CERTIFICATE_OPERATION = 'domain-certificate';

export const CERTIFICATE_STATES = ['pending', 'issuing', 'issued', 'failed'] as const;
export type CertificateState = (typeof CERTIFICATE_STATES)[number];

/**
 * When a certificate valid from `notBefore` to `notAfter` is renewed: once two thirds of its
 * lifetime have passed (30 days before the end of a 90-day certificate, as Let's Encrypt advises).
 */
export function renewalTime(notBefore: Date, notAfter: Date): Date {
  const life = notAfter.getTime() - notBefore.getTime();
  return new Date(notBefore.getTime() + Math.floor((life * 2) / 3));
}
