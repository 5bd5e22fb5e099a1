import { createHash } from 'node:crypto';
import type Koa from 'koa';
import type { DataSource } from 'typeorm';
import type { SecretBox } from '../../domain/secret-box';
import { Problem } from '../problem';

const KEY = /^[A-Za-z0-9._:-]{1,255}$/;
/** How long a request waits for another one holding the same key before it answers 409. */
const WAIT_MS = 10_000;
/** A claim older than this was left by a process that died mid-request; the key is free again. */
const IN_PROGRESS_TTL = "interval '2 minutes'";
const REPLAYED_HEADERS = ['location', 'link', 'x-total-count', 'deprecation', 'cache-control'];

/**
 * Idempotency-Key on POST: the first response (any status below 500) is stored for 24
 * hours and replayed to a retry of the same request; the same key on a different request
 * is refused with 422. A response marked `Cache-Control: no-store` (it carries a secret
 * shown once, e.g. a webhook's signing secret) is stored sealed with the secret box.
 * Concurrent requests with one key run the handler once; the others replay its answer.
 */
export function idempotency(ds: DataSource, secretBox: SecretBox): Koa.Middleware {
  return async (ctx, next) => {
    const key = ctx.get('idempotency-key');
    if (ctx.method !== 'POST' || !key) return next();
    if (!KEY.test(key)) throw new Problem(400, 'Idempotency-Key must be 1-255 characters of [A-Za-z0-9._:-]');
    const workspace = ctx.state.caller!.workspaceUuid;
    const requestHash = createHash('sha256')
      .update(
        `${ctx.method} ${ctx.path}\n${ctx.querystring}\n${JSON.stringify((ctx.request as unknown as { body?: unknown }).body ?? null)}`,
      )
      .digest('hex');
    // Claim the key first (status 0 = in progress), so concurrent requests with one key run
    // the handler once: the others wait for the first answer and replay it.
    const claimed = await ds.query(
      `INSERT INTO idempotency_keys (workspace_uuid, key, method, path, request_hash, status, body, headers)
       VALUES ($1, $2, $3, $4, $5, 0, NULL, '{}')
       ON CONFLICT (workspace_uuid, key) DO UPDATE SET method = EXCLUDED.method, path = EXCLUDED.path,
         request_hash = EXCLUDED.request_hash, status = 0, body = NULL, headers = '{}', created_at = now()
       WHERE idempotency_keys.created_at <= now() - interval '24 hours'
          OR (idempotency_keys.status = 0 AND idempotency_keys.created_at <= now() - ${IN_PROGRESS_TTL})
       RETURNING key`,
      [workspace, key, ctx.method, ctx.path, requestHash],
    );
    if (claimed.length === 0) {
      const stored = await storedAnswer(ds, workspace, key);
      if (stored.request_hash !== requestHash) {
        throw new Problem(422, 'this Idempotency-Key was already used for a different request');
      }
      ctx.status = stored.status;
      for (const [k, v] of Object.entries(stored.headers as Record<string, string>)) ctx.set(k, v);
      ctx.set('Idempotent-Replayed', 'true');
      ctx.body =
        stored.headers['cache-control'] === 'no-store'
          ? JSON.parse(secretBox.open(stored.body as string))
          : stored.body;
      return;
    }
    const release = () =>
      ds.query(`DELETE FROM idempotency_keys WHERE workspace_uuid = $1 AND key = $2 AND status = 0`, [workspace, key]);
    try {
      await next();
    } catch (err) {
      await release().catch(() => {});
      throw err;
    }
    if (ctx.status >= 500) {
      await release();
      return;
    }
    const headers: Record<string, string> = {};
    for (const h of REPLAYED_HEADERS) {
      const v = ctx.response.get(h);
      if (v) headers[h] = v;
    }
    if (ctx.response.is('problem+json')) headers['content-type'] = 'application/problem+json';
    await ds.query(
      `UPDATE idempotency_keys SET status = $3, body = $4, headers = $5 WHERE workspace_uuid = $1 AND key = $2`,
      [
        workspace,
        key,
        ctx.status,
        JSON.stringify(
          headers['cache-control'] === 'no-store'
            ? secretBox.seal(JSON.stringify(ctx.body ?? null))
            : (ctx.body ?? null),
        ),
        JSON.stringify(headers),
      ],
    );
  };
}

/**
 * The answer stored under a key another request holds: waits while that request is still
 * in progress (status 0), up to WAIT_MS, then answers 409 (retry later).
 */
async function storedAnswer(
  ds: DataSource,
  workspace: string,
  key: string,
): Promise<{ request_hash: string; status: number; body: unknown; headers: Record<string, string> }> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const [stored] = await ds.query(
      `SELECT request_hash, status, body, headers FROM idempotency_keys WHERE workspace_uuid = $1 AND key = $2`,
      [workspace, key],
    );
    if (stored && stored.status !== 0) return stored;
    if (!stored || Date.now() > deadline) {
      throw new Problem(409, 'a request with this Idempotency-Key is still in progress; retry it later', {
        headers: { 'Retry-After': '1' },
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
