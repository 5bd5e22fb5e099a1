import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import { WorkflowNotFoundError } from '@temporalio/client';
import type Koa from 'koa';
import { isUuid } from '../domain/ids';
import { branchMatches, previewAppName, previewKey } from '../domain/previews';
import { one, rows } from '../entities/sql';
import { auditedWrite, type Origin, type Tx } from './commands/audited-write';
import type { ApiDeps } from './context';
import { appAddressKey, rateLimit, type RequestLimiter } from './middleware/rate-limit';
import { checkAssignment } from './placement';
import { effectiveTarget, PREVIEW_OPERATION, previewSnapshot, previewWorkflowId, wakePreview } from './preview-envs';
import { Problem, badRequest, conflict } from './problem';

/**
 * The code-host endpoint: GitHub-compatible `pull_request` and `push` deliveries for one
 * app's preview environments. It sits outside the bearer-authenticated route table: a
 * delivery is authenticated by `X-Hub-Signature-256` (HMAC-SHA256 of the raw body under
 * the app's webhook secret, compared in constant time). Anything unsigned, badly signed,
 * or for an app without preview configuration is 401, alike.
 */
export const CODE_HOST_PATH = '/api/v1/code_host/apps/:uuid/events';
export const CODE_HOST_BODY_LIMIT = 5 * 1024 * 1024;

export interface HookOutcome {
  result: 'pong' | 'created' | 'updated' | 'destroying' | 'ignored';
  preview_environment_id?: number;
  reason?: string;
}

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

interface ParentRow {
  uuid: string;
  workspace_uuid: string;
  project_uuid: string | null;
  resource_uuid: string;
  name: string;
  enabled: boolean;
  pull_requests: boolean;
  branch_patterns: string[];
  config_resource: string | null;
  config_project: string | null;
  use_parent_image: boolean;
  lifetime_hours: number | null;
  webhook_secret_sealed: string;
}

interface Source {
  key: string;
  pullRequest: number | null;
  title: string;
  author: string;
  url: string;
  branch: string;
  baseBranch: string;
  sha: string;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const ignored = (reason: string): HookOutcome => ({ result: 'ignored', reason });

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
      const parent = await one<ParentRow>(
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

/**
 * The audit entry of a delivery that changed an environment, in the transaction of the change:
 * the platform acting on the code host's behalf (actor system, source code-host). Its resource
 * is the environment's own app uuid (preview_environments.app_uuid), fixed for the environment's
 * life and the resource the preview routes record under too, so one environment's history reads
 * under one uuid; the parent app's uuid is in the create entry's diff (parent_app_uuid). The diff
 * covers the whole row (branch, head_sha, status, ...); a delivery whose diff is empty changed
 * nothing and records nothing.
 */
function auditDelivery(
  tx: Tx,
  parent: ParentRow,
  action: string,
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
): Promise<void> {
  return tx.audit({
    action,
    resourceType: 'preview',
    resourceUuid: (after ?? before)!.app_uuid as string,
    appUuid: parent.uuid,
    before,
    after,
    skipWhenUnchanged: true,
  });
}

async function handle(
  deps: ApiDeps,
  parent: ParentRow,
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
    const source: Source = {
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

/** A new environment (creating, its workflow enqueued) or a new head commit for one (updating). */
async function upsert(
  deps: ApiDeps,
  parent: ParentRow,
  origin: Origin,
  s: Source,
  options: { create: boolean },
): Promise<HookOutcome> {
  return auditedWrite(deps, origin, async (tx) => {
    const m = tx.m;
    // The parent's row lock orders a delivery against DELETE /apps/{uuid}: an app being deleted
    // takes no new environment and no new commit (409, like the routes' "being deleted"
    // conflicts), since its deletion saga destroys the environments it finds; a closing pull
    // request or deleted branch (destroy) is still taken.
    const locked = await one<{ state: string }>(m, `SELECT state FROM apps WHERE uuid = $1 FOR UPDATE`, [parent.uuid]);
    if (!locked || locked.state === 'deleting') throw conflict('the app is being deleted');
    const existing = await one<{ id: number; status: string; head_sha: string }>(
      m,
      `SELECT id, status, head_sha FROM preview_environments WHERE parent_app_uuid = $1 AND key = $2 FOR UPDATE`,
      [parent.uuid, s.key],
    );
    if (existing) {
      if (existing.status === 'destroying')
        throw conflict('this preview environment is being destroyed; deliver the event again once it is gone');
      const newCommit = existing.head_sha !== s.sha;
      const before = await previewSnapshot(m, existing.id);
      await m.query(
        `UPDATE preview_environments SET pull_request_title = $2, pull_request_author = $3, pull_request_url = $4, base_branch = $5,
                pull_request_state = 'open', updated_at = now(),
                head_sha = $6, generation = generation + $7::int,
                last_commit_at = CASE WHEN $7::int = 1 THEN now() ELSE last_commit_at END,
                expires_at = CASE WHEN $7::int = 1 AND $8::int IS NOT NULL THEN now() + make_interval(hours => $8::int) ELSE expires_at END,
                status = CASE WHEN $7::int = 1 AND status IN ('active', 'failed') THEN 'updating' ELSE status END
          WHERE id = $1`,
        [existing.id, s.title, s.author, s.url, s.baseBranch, s.sha, newCommit ? 1 : 0, parent.lifetime_hours],
      );
      await auditDelivery(tx, parent, 'preview.update', before, await previewSnapshot(m, existing.id));
      if (newCommit) tx.afterCommit(() => wakePreview(deps, parent.uuid, s.key));
      return { result: 'updated', preview_environment_id: existing.id };
    }
    if (!options.create) return ignored('no preview environment for this pull request');
    return create(tx, parent, s);
  });
}

/**
 * Whether the previous environment's workflow under this key is still finishing (its row is
 * already gone). A start now would attach to that run (conflict policy use-existing), so
 * the delivery is refused with 409 until it has closed; a closed run cannot come back.
 */
async function previousRunActive(deps: ApiDeps, parentAppUuid: string, key: string): Promise<boolean> {
  try {
    const run = await deps.temporal.workflow.getHandle(previewWorkflowId(parentAppUuid, key)).describe();
    return run.status.name === 'RUNNING';
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError))
      deps.logger.warn({ err, parentAppUuid, key }, 'could not describe the previous preview workflow');
    return false;
  }
}

async function create(tx: Tx, parent: ParentRow, s: Source): Promise<HookOutcome> {
  const { m, deps } = tx;
  if (await previousRunActive(deps, parent.uuid, s.key)) {
    throw conflict(
      'the previous preview environment of this pull request or branch is still being removed; deliver the event again in a moment',
    );
  }
  const target = effectiveTarget(parent, {
    resource_uuid: parent.config_resource,
    project_uuid: parent.config_project,
  });
  await checkAssignment(m, target.resourceUuid, target.projectUuid, 'config.resource_id');
  let appName = previewAppName(
    parent.name,
    s.pullRequest !== null ? { pullRequest: s.pullRequest } : { branch: s.branch },
  );
  const taken = await one(
    m,
    `SELECT 1 FROM apps WHERE name = $1 UNION ALL SELECT 1 FROM preview_environments WHERE app_name = $1`,
    [appName],
  );
  if (taken) appName = `${appName}-${randomBytes(2).toString('hex')}`;
  const region = await one<{ domain: string }>(
    m,
    `SELECT r.domain FROM compute_resources c JOIN regions r ON r.id = c.region_id WHERE c.uuid = $1`,
    [target.resourceUuid],
  );
  const [row] = await rows<{ id: number }>(
    m,
    `INSERT INTO preview_environments (workspace_uuid, parent_app_uuid, key, app_uuid, app_name, resource_uuid, project_uuid, use_parent_image,
       url, pull_request_number, pull_request_title, pull_request_author, pull_request_url, branch, base_branch, head_sha, last_commit_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, now(),
             CASE WHEN $17::int IS NULL THEN NULL ELSE now() + make_interval(hours => $17::int) END)
     ON CONFLICT (parent_app_uuid, key) DO NOTHING RETURNING id`,
    [
      parent.workspace_uuid,
      parent.uuid,
      s.key,
      randomUUID(),
      appName,
      target.resourceUuid,
      target.projectUuid,
      parent.use_parent_image,
      `https://${appName}.${region!.domain}`,
      s.pullRequest,
      s.title,
      s.author,
      s.url,
      s.branch,
      s.baseBranch,
      s.sha,
      parent.lifetime_hours,
    ],
  );
  if (!row)
    throw conflict('another delivery created this preview environment at the same time; deliver the event again');
  await tx.enqueue({
    operation: PREVIEW_OPERATION,
    workflow: 'previewEnvironment',
    workspaceUuid: parent.workspace_uuid,
    resourceUuid: parent.uuid,
    subId: s.key,
    args: [{ workspaceUuid: parent.workspace_uuid, parentAppUuid: parent.uuid, key: s.key }],
  });
  await auditDelivery(tx, parent, 'preview.create', null, await previewSnapshot(m, row.id));
  return { result: 'created', preview_environment_id: row.id };
}

/** Closed or merged pull request, deleted branch: -> destroying. */
async function destroy(
  deps: ApiDeps,
  parent: ParentRow,
  origin: Origin,
  key: string,
  pr: { merged: boolean } | null,
): Promise<HookOutcome> {
  return auditedWrite(deps, origin, async (tx) => {
    const m = tx.m;
    const found = await one<{ id: number }>(
      m,
      `SELECT id FROM preview_environments WHERE parent_app_uuid = $1 AND key = $2 FOR UPDATE`,
      [parent.uuid, key],
    );
    if (!found) return ignored('no preview environment to destroy');
    const before = await previewSnapshot(m, found.id);
    await m.query(
      `UPDATE preview_environments SET status = 'destroying', updated_at = now(),
              pull_request_state = CASE WHEN $2::boolean THEN 'closed' ELSE pull_request_state END,
              pull_request_merged = CASE WHEN $2::boolean THEN $3::boolean ELSE pull_request_merged END,
              closed_at = CASE WHEN $2::boolean THEN now() ELSE closed_at END
        WHERE id = $1`,
      [found.id, pr !== null, pr?.merged ?? false],
    );
    await auditDelivery(tx, parent, 'preview.destroy', before, await previewSnapshot(m, found.id));
    tx.afterCommit(() => wakePreview(deps, parent.uuid, key));
    return { result: 'destroying', preview_environment_id: found.id };
  });
}
