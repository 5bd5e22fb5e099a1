import { diffRecords } from '../domain/audit';
import { insertAuditEvent } from '../entities/audit-events';
import type { Db } from '../entities/sql';
import { one } from '../entities/sql';
import type { ApiDeps } from './context';
import type { RouteContext, RouteDef } from './route';

/** One entry of the route being served: its action is the route's declared `audit` action. */
export interface AuditEntry {
  /** By default the action's first part (`bucket` of `bucket.create`). */
  resourceType?: string;
  resourceUuid: string | null;
  /** The app the change concerns; by default the resource itself when it is an app, else the app owning the snapshot's row. */
  appUuid?: string | null;
  /** Snapshots of the record before and after (null for a create / a delete); secret fields are redacted. */
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

/** A row of a table as a plain JSON snapshot, for audit diffs (within the caller's transaction). */
export async function snapshot(db: Db, table: string, uuid: string): Promise<Record<string, unknown> | null> {
  if (!/^[a-z_]+$/.test(table)) throw new Error(`bad table name ${table}`);
  const row = await one<{ s: Record<string, unknown> }>(db, `SELECT to_jsonb(t) AS s FROM ${table} t WHERE uuid = $1`, [uuid]);
  return row?.s ?? null;
}

/** The app a change concerns: the app itself, else the app owning the row (a preview's parent app). */
function owningApp(entry: AuditEntry, resourceType: string): string | null {
  if (resourceType === 'app') return entry.resourceUuid;
  const row = entry.after ?? entry.before;
  const owner = row?.parent_app_uuid ?? row?.app_uuid;
  return typeof owner === 'string' ? owner : null;
}

/**
 * Records one audit entry for an accepted mutating request, in the transaction of its
 * change (so a rolled-back change leaves none): the actor (member, or workspace token by
 * its uuid, never the token), action, resource, field-level diff with secrets redacted,
 * request id, client IP and user agent.
 */
export async function recordAudit(db: Db, ctx: RouteContext<unknown, unknown, unknown>, entry: AuditEntry): Promise<void> {
  const action = ctx.route.audit;
  if (!action) throw new Error(`${ctx.route.method.toUpperCase()} ${ctx.route.path} records an audit entry but declares no audit action`);
  const caller = ctx.caller;
  const resourceType = entry.resourceType ?? action.split('.')[0]!;
  await insertAuditEvent(db, {
    workspaceUuid: caller.workspaceUuid,
    actorType: caller.memberUuid ? 'member' : 'workspace_token',
    actorUuid: caller.memberUuid ?? caller.tokenUuid,
    source: 'api',
    action,
    resourceType,
    resourceUuid: entry.resourceUuid,
    appUuid: entry.appUuid ?? owningApp(entry, resourceType),
    diff: diffRecords(entry.before ?? null, entry.after ?? null),
    requestId: ctx.requestId,
    clientIp: ctx.koa.ip || null,
    userAgent: (ctx.koa.get('user-agent') || '').slice(0, 500) || null,
  });
}

async function auditActions(deps: ApiDeps, requestId: string): Promise<string[]> {
  const found = await deps.dataSource.query(`SELECT action FROM audit_events WHERE request_id = $1 ORDER BY created_at`, [requestId]) as Array<{ action: string }>;
  return found.map((f) => f.action);
}

/**
 * The audit check (tests): after an accepted request, the entries it wrote must be exactly
 * what its route declares: one entry with the declared action, or none for `audit: false`.
 * A route that forgets its entry, or writes two, fails loudly instead of passing silently.
 * Request ids may come from the client, so entries already under the id are set aside first.
 */
export async function auditCheck(deps: ApiDeps, r: RouteDef, requestId: string): Promise<(() => Promise<void>) | null> {
  if (!deps.verifyAudit || r.method === 'get') return null;
  const earlier = (await auditActions(deps, requestId)).length;
  return async () => {
    const actions = (await auditActions(deps, requestId)).slice(earlier);
    const expected = r.audit ? [r.audit] : [];
    if (JSON.stringify(actions) !== JSON.stringify(expected)) {
      throw new Error(`${r.method.toUpperCase()} ${r.path} recorded audit entries ${JSON.stringify(actions)}, its route declares ${JSON.stringify(expected)}`);
    }
    deps.onAuditVerified?.(r);
  };
}
