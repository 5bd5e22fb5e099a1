import type Koa from 'koa';
import { hashToken } from '../../domain/tokens';

const BEARER = /^Bearer[ ]+([^\s]+)$/i;
const hashes = new WeakMap<Koa.Context, string | null>();

/**
 * The SHA-256 of the request's `Authorization: Bearer <token>` token, or null when the
 * header is absent or reads otherwise; hashed once per request (rate limiting keys on it,
 * authentication looks the token up by it).
 */
export function bearerTokenHash(ctx: Koa.Context): string | null {
  let hash = hashes.get(ctx);
  if (hash === undefined) {
    const bearer = BEARER.exec(ctx.get('authorization'));
    hash = bearer ? hashToken(bearer[1]!) : null;
    hashes.set(ctx, hash);
  }
  return hash;
}
