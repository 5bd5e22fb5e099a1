import type { AuditSource, Diff } from '../domain/audit';
import type { Db } from './sql';

export interface AuditEventRow {
  workspaceUuid: string;
  /** A member, a workspace token (by its uuid, never the token), or the platform itself. */
  actorType: 'member' | 'workspace_token' | 'system';
  actorUuid: string | null;
  source: AuditSource;
  action: string;
  resourceType: string;
  resourceUuid: string | null;
  /** The app the entry concerns (the app itself, or the app owning the resource), for its activity feed. */
  appUuid?: string | null;
  diff: Diff;
  requestId?: string | null;
  clientIp?: string | null;
  userAgent?: string | null;
}

/** Writes one audit entry with the caller's connection, so it commits or rolls back with the change. */
export async function insertAuditEvent(db: Db, e: AuditEventRow): Promise<void> {
  await db.query(
    `INSERT INTO audit_events (workspace_uuid, actor_type, actor_uuid, source, action, resource_type, resource_uuid, app_uuid, diff, request_id, client_ip, user_agent)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [
      e.workspaceUuid,
      e.actorType,
      e.actorUuid,
      e.source,
      e.action,
      e.resourceType,
      e.resourceUuid,
      e.appUuid ?? (e.resourceType === 'app' ? e.resourceUuid : null),
      JSON.stringify(e.diff),
      e.requestId ?? null,
      e.clientIp ?? null,
      e.userAgent ?? null,
    ],
  );
}
