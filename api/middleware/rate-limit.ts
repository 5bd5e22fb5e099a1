import type Koa from 'koa';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { RateLimit } from '../../platform/config';
import { Problem } from '../problem';
import { bearerTokenHash } from './bearer';

/**
 * Rate limits (BERTH_RATE_LIMIT): at most `points` requests per caller in each fixed window
 * of `durationSeconds`, counted in this process's memory (rate-limiter-flexible; one Map
 * lookup per request; docs/decisions.md says what to use with many API replicas). A caller
 * is what identifies it: its token (by hash), else the app it addresses plus its client
 * address, else its client address; callers never share a count, so one tenant over its
 * limit does not slow another.
 */
export type RequestLimiter = RateLimiterMemory;

export function createRequestLimiter(limit: RateLimit): RequestLimiter {
  return new RateLimiterMemory({ keyPrefix: '', points: limit.points, duration: limit.durationSeconds });
}

const addressKey = (ctx: Koa.Context) => `addr:${ctx.ip}`;

/** An API caller: its bearer token (by hash), else its client address. */
export function tokenOrAddressKey(ctx: Koa.Context): string {
  const hash = bearerTokenHash(ctx);
  return hash ? `token:${hash}` : addressKey(ctx);
}

/** A caller of an unauthenticated per-app endpoint (code-host deliveries, git): the app and the client address. */
export function appAddressKey(app: string, ctx: Koa.Context): string {
  return `app:${app.slice(0, 100)}:${ctx.ip}`;
}

/** Counts one request under `key`; sets the RateLimit-* headers; a 429 problem past the limit. */
async function count(limiter: RequestLimiter, key: string, ctx: Koa.Context): Promise<void> {
  let res: RateLimiterRes;
  try {
    res = await limiter.consume(key);
  } catch (err) {
    if (!(err instanceof RateLimiterRes)) throw err;
    res = err;
  }
  const reset = String(Math.max(1, Math.ceil(res.msBeforeNext / 1000)));
  ctx.set('RateLimit-Limit', String(limiter.points));
  ctx.set('RateLimit-Remaining', String(res.remainingPoints));
  ctx.set('RateLimit-Reset', reset);
  if (res.consumedPoints > limiter.points) {
    throw new Problem(
      429,
      `rate limit of ${limiter.points} requests per ${limiter.duration} s reached; retry in ${reset} s`,
      {
        headers: { 'Retry-After': reset },
      },
    );
  }
}

/**
 * The middleware: every answer after it carries RateLimit-Limit, RateLimit-Remaining and
 * RateLimit-Reset (seconds until the window resets); past the limit, a 429 problem with
 * Retry-After. A refused credential (401) also counts against the client address, so
 * guessing tokens, apps or signatures is limited per address however the key varies.
 */
export function rateLimit(limiter: RequestLimiter, keyOf: (ctx: Koa.Context) => string): Koa.Middleware {
  return async (ctx, next) => {
    const key = keyOf(ctx);
    await count(limiter, key, ctx);
    try {
      await next();
    } catch (err) {
      const address = addressKey(ctx);
      if (err instanceof Problem && err.status === 401 && key !== address) await count(limiter, address, ctx);
      throw err;
    }
  };
}
