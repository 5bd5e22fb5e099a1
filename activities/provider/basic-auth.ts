import { createHash, timingSafeEqual } from 'node:crypto';

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * Whether an `Authorization` header carries these HTTP Basic credentials. Both parts are
 * compared as SHA-256 digests with a constant-time compare, so neither the content nor the
 * length of the expected values leaks through timing. Shared by every ingress.
 */
export function basicAuthMatches(header: string | undefined, username: string, password: string): boolean {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!m) return false;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return false;
  const userOk = timingSafeEqual(digest(decoded.slice(0, colon)), digest(username));
  const passwordOk = timingSafeEqual(digest(decoded.slice(colon + 1)), digest(password));
  return userOk && passwordOk;
}

/** The challenge sent with a 401. */
export const BASIC_AUTH_CHALLENGE = 'Basic realm="app", charset="UTF-8"';
