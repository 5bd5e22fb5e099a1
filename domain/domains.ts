/**
 * Custom domains: name rules, the TXT record that proves ownership, and the verification
 * schedule (pure; shared by the API, the activities and the verification workflow).
 */

export const VERIFICATION_STATUSES = ['pending', 'in_progress', 'verified', 'failed'] as const;
export type VerificationStatus = (typeof VERIFICATION_STATUSES)[number];

/** The TXT record prefix the contract names. */
export const TXT_PREFIX = '_platformapp-verify';

/** Where the verification token is published: `_platformapp-verify.<domain>`. */
export function txtRecordName(domain: string): string {
  return `${TXT_PREFIX}.${domain}`;
}

/**
 * A check runs, then waits, in Fibonacci minutes capped at 60:
 * 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 60, 60, ... (decision: 30 checks, about 21 hours).
 */
export const VERIFY_MAX_ATTEMPTS = 30;
export const VERIFY_BACKOFF_CAP_MINUTES = 60;

/** Minutes to wait after failed check number `attempt` (1-based) before the next one. */
export function verifyDelayMinutes(attempt: number): number {
  let a = 1;
  let b = 1;
  for (let i = 1; i < attempt; i++) {
    [a, b] = [b, a + b];
    if (a >= VERIFY_BACKOFF_CAP_MINUTES) return VERIFY_BACKOFF_CAP_MINUTES;
  }
  return Math.min(a, VERIFY_BACKOFF_CAP_MINUTES);
}

/** Every wait of a verification that never finds its record, in minutes. */
export function verifySchedule(attempts = VERIFY_MAX_ATTEMPTS): number[] {
  return Array.from({ length: attempts - 1 }, (_, i) => verifyDelayMinutes(i + 1));
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * Why a domain name is refused, or null when it is acceptable: lower-case letters,
 * digits and hyphens in dot-separated labels (at least two), 253 characters at most,
 * no wildcard, no trailing dot, a top-level label that is not all digits.
 */
export function domainNameProblem(name: string): string | null {
  if (name.length > 253) return 'a domain name has at most 253 characters';
  if (name !== name.toLowerCase()) return 'a domain name is written in lower case';
  const labels = name.split('.');
  if (labels.length < 2) return 'a domain name has at least two labels, e.g. example.com';
  if (labels.some((l) => !LABEL.test(l)))
    return 'each label is 1-63 letters, digits or hyphens, not starting or ending with a hyphen';
  if (/^[0-9]+$/.test(labels[labels.length - 1]!)) return 'an IP address is not a domain name';
  return null;
}

/** For `www.<root>`, the root; otherwise null (only www subdomains inherit a verified root). */
export function wwwRoot(name: string): string | null {
  return name.startsWith('www.') && name.split('.').length >= 3 ? name.slice(4) : null;
}

/** True when `name` is the platform domain or a name under it (those are not custom domains). */
export function isUnder(name: string, platformDomain: string): boolean {
  return name === platformDomain || name.endsWith(`.${platformDomain}`);
}

/** The CNAME target of a verified domain: the app's public host under its region's domain. */
export function dnsTargetOf(appName: string, regionDomain: string): string {
  return `${appName}.${regionDomain}`;
}
