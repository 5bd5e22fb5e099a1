import { createHmac, timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import type Koa from 'koa';
import { isUuid } from '../domain/ids';
import { branchMatches, previewKey } from '../domain/previews';
import { one } from '../entities/sql';
import { auditedWrite, type Origin } from './commands/audited-write';
import {
  destroyPreviewOnDelivery,
  ignored,
  upsertPreviewOnDelivery,
  type DeliveryParent,
  type DeliverySource,
  type HookOutcome,
} from './commands/previews';
import type { ApiDeps } from './context';
import { appAddressKey, rateLimit, type RequestLimiter } from './middleware/rate-limit';
import { Problem, badRequest } from './problem';

/**
 * The code-host endpoint: GitHub-compatible `pull_request` and `push` deliveries for one
 * app's preview environments. It sits outside the bearer-authenticated route table: a
 * delivery is authenticated by `X-Hub-Signature-256` (HMAC-SHA256 of the raw body under
 * the app's webhook secret, compared in constant time). Anything unsigned, badly signed,
 * or for an app without preview configuration is 401, alike.
 */
export const CODE_HOST_PATH = '/api/v1/code_host/apps/:uuid/events';
export const CODE_HOST_BODY_LIMIT = 5 * 1024 * 1024;

/** `sha256=<hex>` of HMAC-SHA256(body) under the secret (what a code host sends). */
export function signBody(secret: string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** Constant-time check of an `X-Hub-Signature-256` header against the raw body. */
export function signatureMatches(secret: string, body: Buffer, header: string | undefined): boolean {
  const m = /^sha256=([0-9a-f]{64})$/i.exec(header ?? '');
  if (!m) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(m[1]!, 'hex'));
}

async function rawBody(ctx: Koa.Context): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > CODE_HOST_BODY_LIMIT)
      throw new Problem(413, `a code-host delivery is larger than ${CODE_HOST_BODY_LIMIT} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

export function codeHostRouter(deps: ApiDeps, limiter: RequestLimiter): Router {
  const router = new Router();
  router.post(
    CODE_HOST_PATH,
    rateLimit(limiter, (ctx) => appAddressKey(ctx.params.uuid ?? '', ctx)),
    async (ctx) => {
      const body = await rawBody(ctx);
      const refused = () =>
        new Problem(401, "the X-Hub-Signature-256 signature does not match this app's preview webhook secret");
      if (!isUuid(ctx.params.uuid!)) throw refused();
      const parent = await one<DeliveryParent>(
        deps.dataSource,
        `SELECT a.uuid, a.workspace_uuid, a.project_uuid, a.resource_uuid, a.name, c.enabled, c.pull_requests, c.branch_patterns,
              c.resource_uuid AS config_resource, c.project_uuid AS config_project, c.use_parent_image, c.lifetime_hours, c.webhook_secret_sealed
         FROM apps a JOIN preview_configs c ON c.app_uuid = a.uuid WHERE a.uuid = $1`,
        [ctx.params.uuid],
      );
      if (
        !parent ||
        !signatureMatches(
          deps.secretBox.open(parent.webhook_secret_sealed),
          body,
          ctx.get('X-Hub-Signature-256') || undefined,
        )
      ) {
        throw refused();
      }
      let payload: Record<string, any>;
      try {
        payload = JSON.parse(body.toString('utf8'));
      } catch {
        throw badRequest('the delivery body is not valid JSON');
      }
      if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
        throw badRequest('the delivery body is not a JSON object');
      // the platform acting on the code host's behalf
      const origin: Origin = {
        workspaceUuid: parent.workspace_uuid,
        actorType: 'system',
        actorUuid: null,
        source: 'code-host',
        requestId: ctx.state.requestId ?? null,
        clientIp: ctx.ip || null,
        userAgent: (ctx.get('user-agent') || '').slice(0, 500) || null,
      };
      const outcome = await handle(deps, parent, origin, ctx.get('X-GitHub-Event'), payload);
      deps.logger.info(
        { appUuid: parent.uuid, event: ctx.get('X-GitHub-Event'), delivery: ctx.get('X-GitHub-Delivery'), ...outcome },
        'code-host delivery',
      );
      ctx.status = outcome.result === 'pong' ? 200 : 202;
      ctx.body = outcome;
    },
  );
  return router;
}

async function handle(
  deps: ApiDeps,
  parent: DeliveryParent,
  origin: Origin,
  event: string,
  p: Record<string, any>,
): Promise<HookOutcome> {
  if (event === 'ping') return { result: 'pong' };
  if (event === 'pull_request') {
    const pr = p.pull_request;
    const number = p.number ?? pr?.number;
    if (!pr || typeof pr !== 'object' || !Number.isInteger(number) || number < 1 || number > 2147483647) {
      throw badRequest('a pull_request delivery needs number and pull_request');
    }
    const key = previewKey({ pullRequest: number });
    const action = str(p.action);
    // Closing always cleans up, even after previews were switched off.
    if (action === 'closed') return destroy(deps, parent, origin, key, { merged: pr.merged === true });
    if (!parent.enabled) return ignored('preview environments are disabled for this app');
    if (!parent.pull_requests) return ignored('pull requests do not trigger preview environments for this app');
    if (!['opened', 'reopened', 'synchronize', 'edited', 'ready_for_review'].includes(action)) {
      return ignored(`pull_request action "${action}" changes nothing`);
    }
    const source: DeliverySource = {
      key,
      pullRequest: number,
      title: str(pr.title),
      author: str(pr.user?.login),
      url: str(pr.html_url),
      branch: str(pr.head?.ref),
      baseBranch: str(pr.base?.ref),
      sha: str(pr.head?.sha),
    };
    if (!source.branch || !/^[0-9a-f]{7,64}$/i.test(source.sha))
      throw badRequest('pull_request.head needs ref and sha');
    return upsert(deps, parent, origin, source, { create: action !== 'edited' });
  }
  if (event === 'push') {
    const ref = str(p.ref);
    if (!ref.startsWith('refs/heads/')) return ignored('only branch pushes trigger preview environments');
    const branch = ref.slice('refs/heads/'.length);
    const key = previewKey({ branch });
    // A deleted branch always cleans up its environment.
    if (p.deleted === true) return destroy(deps, parent, origin, key, null);
    if (!parent.enabled) return ignored('preview environments are disabled for this app');
    if (!parent.branch_patterns.some((pattern) => branchMatches(pattern, branch)))
      return ignored(`branch ${branch} matches no trigger pattern`);
    const byPr = await one<{ pull_request_number: number }>(
      deps.dataSource,
      `SELECT pull_request_number FROM preview_environments WHERE parent_app_uuid = $1 AND branch = $2 AND pull_request_number IS NOT NULL`,
      [parent.uuid, branch],
    );
    if (byPr) return ignored(`branch ${branch} is previewed by pull request #${byPr.pull_request_number}`);
    const sha = str(p.after);
    if (!/^[0-9a-f]{7,64}$/i.test(sha)) throw badRequest('a push delivery needs after (the head commit)');
    return upsert(
      deps,
      parent,
      origin,
      {
        key,
        pullRequest: null,
        title: '',
        author: str(p.pusher?.name ?? p.sender?.login),
        url: '',
        branch,
        baseBranch: str(p.repository?.default_branch),
        sha,
      },
      { create: true },
    );
  }
  return ignored(`event "${event || '(none)'}" is not used by preview environments`);
}

/** A new environment or a new head commit for one, in one audited write. */
function upsert(
  deps: ApiDeps,
  parent: DeliveryParent,
  origin: Origin,
  s: DeliverySource,
  options: { create: boolean },
): Promise<HookOutcome> {
  return auditedWrite(deps, origin, (tx) => upsertPreviewOnDelivery(tx, parent, s, options));
}

/** Closed or merged pull request, deleted branch: -> destroying, in one audited write. */
function destroy(
  deps: ApiDeps,
  parent: DeliveryParent,
  origin: Origin,
  key: string,
  pr: { merged: boolean } | null,
): Promise<HookOutcome> {
  return auditedWrite(deps, origin, (tx) => destroyPreviewOnDelivery(tx, parent, key, pr));
}
