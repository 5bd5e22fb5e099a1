import { APP_STATES, type AppState } from '../domain/apps';
import type { BucketState } from '../domain/buckets';
import type { AddonState } from '../domain/data';
import type { VerificationStatus } from '../domain/domains';
import type { ProjectState } from '../domain/projects';
import type { StackState } from '../domain/stacks';
import type { SiteState } from '../domain/static-sites';
import type { VpcAttachmentStatus, VpcStatus } from '../domain/vpc';
import { rows, type Db } from '../entities/sql';
import type { ActivityDeps } from './deps';

/** Tables whose rows move through states, and the column holding the state. */
export const STATEFUL_TABLES = {
  projects: 'state',
  apps: 'state',
  vpcs: 'status',
  vpc_attachments: 'status',
  vpc_vpn_gateways: 'status',
  vpc_vpn_users: 'status',
  vpc_site_connections: 'status',
  buckets: 'state',
  static_sites: 'state',
  stack_deployments: 'state',
  domains: 'verification_status',
  addons: 'state',
} as const;

export type StatefulTable = keyof typeof STATEFUL_TABLES;

/** The audit log's resource type of each stateful table. */
const RESOURCE_TYPES: Record<StatefulTable, string> = Object.fromEntries(
  Object.keys(STATEFUL_TABLES).map((t) => [t, t.replace(/ies$/, 'y').replace(/s$/, '')]),
) as Record<StatefulTable, string>;

/** A row of the addons table is an add-on, a standalone service or a cron job. */
const ADDON_TYPE = `CASE WHEN r->>'type' = 'cronjob' THEN 'cronjob' ELSE r->>'kind' END`;

/** The states each stateful table's rows move through (a typo in a move is a compile error). */
export interface StateOf {
  projects: ProjectState;
  apps: AppState;
  vpcs: VpcStatus;
  vpc_attachments: VpcAttachmentStatus;
  vpc_vpn_gateways: VpcStatus;
  vpc_vpn_users: VpcStatus;
  vpc_site_connections: VpcStatus;
  buckets: BucketState;
  static_sites: SiteState;
  stack_deployments: StackState;
  domains: VerificationStatus;
  addons: AddonState;
}

/** A move of one row of `table` from one of `from` to `to`, in that table's states. */
export type Transition = {
  [T in StatefulTable]: {
    table: T;
    uuid: string;
    /** The move happens only from one of these states. */
    from: readonly StateOf[T][];
    to: StateOf[T];
  };
}[StatefulTable];

/** Columns set with a move, in the same statement (`failure_reason = $6`; parameters from $6 on; `x` is the row). */
export interface MoveAlso {
  set: string;
  params?: unknown[];
}

/**
 * A guarded state move: `UPDATE .. WHERE state = ANY(from)`, recorded in the audit log
 * with source `workflow` in the same statement. Idempotent: a retry after the move
 * succeeded changes nothing and answers false. Every table here has uuid and updated_at
 * columns. Takes the caller's connection (a transaction manager, or the data source).
 */
export async function moveState(db: Db, t: Transition, also?: MoveAlso): Promise<boolean> {
  const column = STATEFUL_TABLES[t.table];
  if (!column) throw new Error(`unknown stateful table ${t.table}`);
  // The move and its audit entry (source: workflow) in one statement. Rows of child
  // tables (no workspace_uuid of their own) take their VPC's or app's workspace. Rows of
  // the addons table are recorded as the add-on, service or cron job they are.
  const moved = await rows(
    db,
    `WITH old AS (SELECT uuid, ${column} AS state FROM ${t.table} WHERE uuid = $1 AND ${column} = ANY($2::text[]) FOR UPDATE),
          moved AS (UPDATE ${t.table} x SET ${column} = $3, updated_at = now()${also ? `, ${also.set}` : ''} FROM old WHERE x.uuid = old.uuid
                    RETURNING x.uuid, to_jsonb(x) AS r, old.state AS from_state),
          owned AS (SELECT uuid, from_state, ${t.table === 'apps' ? 'uuid' : `(r->>'app_uuid')::uuid`} AS app_uuid, COALESCE(${t.table === 'addons' ? ADDON_TYPE : 'NULL'}, $4::text) AS resource_type,
                      COALESCE((r->>'workspace_uuid')::uuid,
                      (SELECT v.workspace_uuid FROM vpcs v WHERE v.uuid = (r->>'vpc_uuid')::uuid),
                      (SELECT a.workspace_uuid FROM apps a WHERE a.uuid = (r->>'app_uuid')::uuid)) AS workspace_uuid FROM moved),
          audited AS (INSERT INTO audit_events (workspace_uuid, actor_type, source, action, resource_type, resource_uuid, app_uuid, diff)
                      SELECT workspace_uuid, 'system', 'workflow', resource_type || '.' || $5::text, resource_type, uuid, app_uuid,
                             jsonb_build_object($5::text, jsonb_build_object('from', from_state, 'to', $3::text))
                        FROM owned WHERE workspace_uuid IS NOT NULL)
     SELECT uuid FROM moved`,
    [t.uuid, t.from, t.to, RESOURCE_TYPES[t.table], column, ...(also?.params ?? [])],
  );
  return moved.length > 0;
}

/** Moves an app to `to` from whatever it reads, except `to` itself and `deleting` (a deleting app is never revived). */
export function moveAppTo(db: Db, uuid: string, to: AppState): Promise<boolean> {
  return moveState(db, { table: 'apps', uuid, from: APP_STATES.filter((s) => s !== to && s !== 'deleting'), to });
}

export function createStateActivities({ dataSource }: Pick<ActivityDeps, 'dataSource'>) {
  return {
    /** A guarded state move recorded in the audit log (source workflow): see moveState. */
    async transition(t: Transition): Promise<boolean> {
      return moveState(dataSource, t);
    },
  };
}
