import type { Db } from '../entities/sql';
import { one } from '../entities/sql';
import { requestOrigin, writeAuditEntry } from './commands/audited-write';
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
  const row = await one<{ s: Record<string, unknown> }>(db, `SELECT to_jsonb(t) AS s FROM ${table} t WHERE uuid = $1`, [
    uuid,
  ]);
  return row?.s ?? null;
}

/**
 * Records one audit entry for an accepted mutating request, in the transaction of its
 * change (so a rolled-back change leaves none), under the route's declared audit action.
 * Commands record theirs through `Tx.audit` (api/commands/audited-write.ts) instead.
 */
export async function recordAudit(
  db: Db,
  ctx: RouteContext<unknown, unknown, unknown>,
  entry: AuditEntry,
): Promise<void> {
  const action = ctx.route.audit;
  if (!action)
    throw new Error(
      `${ctx.route.method.toUpperCase()} ${ctx.route.path} records an audit entry but declares no audit action`,
    );
  await writeAuditEntry(db, requestOrigin(ctx), { action, ...entry });
}

async function auditActions(deps: ApiDeps, requestId: string): Promise<string[]> {
  const found = (await deps.dataSource.query(
    `SELECT action FROM audit_events WHERE request_id = $1 ORDER BY created_at`,
    [requestId],
  )) as Array<{ action: string }>;
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
      throw new Error(
        `${r.method.toUpperCase()} ${r.path} recorded audit entries ${JSON.stringify(actions)}, its route declares ${JSON.stringify(expected)}`,
      );
    }
    deps.onAuditVerified?.(r);
  };
}
