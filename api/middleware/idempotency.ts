import { createHash } from 'node:crypto';
import type Koa from 'koa';
import type { DataSource } from 'typeorm';
import type { SecretBox } from '../../domain/secret-box';
import { Problem } from '../problem';

const KEY = /^[A-Za-z0-9._:-]{1,255}$/;
const REPLAYED_HEADERS = ['location', 'link', 'x-total-count', 'deprecation', 'cache-control'];

/**
 * Idempotency-Key on POST: the first response (any status below 500) is stored for 24
 * hours and replayed to a retry of the same request; the same key on a different request
 * is refused with 422. A response marked `Cache-Control: no-store` (it carries a secret
 * shown once, e.g. a webhook's signing secret) is stored sealed with the secret box.
 */
export function idempotency(ds: DataSource, secretBox: SecretBox): Koa.Middleware {
  return async (ctx, next) => {
    const key = ctx.get('idempotency-key');
    if (ctx.method !== 'POST' || !key) return next();
    if (!KEY.test(key)) throw new Problem(400, 'Idempotency-Key must be 1-255 characters of [A-Za-z0-9._:-]');
    const workspace = ctx.state.caller!.workspaceUuid;
    const requestHash = createHash('sha256')
      .update(`${ctx.method} ${ctx.path}\n${ctx.querystring}\n${JSON.stringify((ctx.request as unknown as { body?: unknown }).body ?? null)}`)
      .digest('hex');
    const [stored] = await ds.query(
      `SELECT request_hash, status, body, headers FROM idempotency_keys
        WHERE workspace_uuid = $1 AND key = $2 AND created_at > now() - interval '24 hours'`,
      [workspace, key],
    );
    if (stored) {
      if (stored.request_hash !== requestHash) {
        throw new Problem(422, 'this Idempotency-Key was already used for a different request');
      }
      ctx.status = stored.status;
      for (const [k, v] of Object.entries(stored.headers as Record<string, string>)) ctx.set(k, v);
      ctx.set('Idempotent-Replayed', 'true');
      ctx.body = stored.headers['cache-control'] === 'no-store' ? JSON.parse(secretBox.open(stored.body as string)) : stored.body;
      return;
    }
    await next();
    if (ctx.status >= 500) return;
    const headers: Record<string, string> = {};
    for (const h of REPLAYED_HEADERS) {
      const v = ctx.response.get(h);
      if (v) headers[h] = v;
    }
    if (ctx.response.is('problem+json')) headers['content-type'] = 'application/problem+json';
    await ds.query(
      `INSERT INTO idempotency_keys (workspace_uuid, key, method, path, request_hash, status, body, headers)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (workspace_uuid, key) DO UPDATE SET method = EXCLUDED.method, path = EXCLUDED.path,
         request_hash = EXCLUDED.request_hash, status = EXCLUDED.status, body = EXCLUDED.body,
         headers = EXCLUDED.headers, created_at = now()
       WHERE idempotency_keys.created_at <= now() - interval '24 hours'`,
      [workspace, key, ctx.method, ctx.path, requestHash, ctx.status,
        JSON.stringify(headers['cache-control'] === 'no-store' ? secretBox.seal(JSON.stringify(ctx.body ?? null)) : ctx.body ?? null),
        JSON.stringify(headers)],
    );
  };
}
