import { diffRecords } from '../domain/audit';
import type { Db } from '../entities/sql';
import { one } from '../entities/sql';
import type { RouteContext } from './route';

export interface AuditEntry {
  /** `<resource type>.<verb>`, e.g. `app.update`, `vpc.create`. */
  action: string;
  resourceType: string;
  resourceUuid: string | null;
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

/**
 * Records one audit entry for an accepted mutating request, in the transaction of its
 * change (so a rolled-back change leaves none): the actor (member, or workspace token by
 * its uuid, never the token), action, resource, field-level diff with secrets redacted,
 * request id, client IP and user agent.
 */
export async function recordAudit(db: Db, ctx: RouteContext<unknown, unknown, unknown>, entry: AuditEntry): Promise<void> {
  const caller = ctx.caller;
  const diff = diffRecords(entry.before ?? null, entry.after ?? null);
  await db.query(
    `INSERT INTO audit_events (workspace_uuid, actor_type, actor_uuid, source, action, resource_type, resource_uuid, diff, request_id, client_ip, user_agent)
     VALUES ($1, $2, $3, 'api', $4, $5, $6, $7, $8, $9, $10)`,
    [caller.workspaceUuid, caller.memberUuid ? 'member' : 'workspace_token', caller.memberUuid ?? caller.tokenUuid,
      entry.action, entry.resourceType, entry.resourceUuid, JSON.stringify(diff), ctx.requestId, ctx.koa.ip || null,
      (ctx.koa.get('user-agent') || '').slice(0, 500) || null]);
}
