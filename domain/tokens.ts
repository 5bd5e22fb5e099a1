import { createHash, randomBytes } from 'node:crypto';

/** Opaque API tokens: `brt_` + 32 random bytes (base64url); stored as SHA-256 only. */
export const TOKEN_PREFIX = 'brt_';

export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function looksLikeToken(value: string): boolean {
  return /^brt_[A-Za-z0-9_-]{43}$/.test(value);
}
