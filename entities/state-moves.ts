import { In, type DataSource, type EntityManager, type EntityTarget, type ObjectLiteral } from 'typeorm';
import type { AppState } from '../domain/apps';
import type { BucketState } from '../domain/buckets';
import type { AddonState } from '../domain/data';
import type { VerificationStatus } from '../domain/domains';
import type { ProjectState } from '../domain/projects';
import type { StackState } from '../domain/stacks';
import type { SiteState } from '../domain/static-sites';
import type { VpcAttachmentStatus, VpcStatus } from '../domain/vpc';
import { Addon } from './addon';
import { App } from './app';
import { insertAuditEvent } from './audit-events';
import { Bucket } from './bucket';
import { CustomDomain } from './domain';
import { Project } from './project';
import { StackDeployment } from './stack';
import { StaticSite } from './static-site';
import { Vpc, VpcAttachment, VpcSiteConnection, VpcVpnGateway, VpcVpnUser } from './vpc';

/**
 * The one writer of state moves, as entities/capacity.ts is of capacity: a guarded change of a
 * row's state and its audit entry (through the audit log's writer), in one transaction.
 */

/** Each stateful table: its entity, the column holding the state, and the audit log's resource type. */
const STATEFUL = {
  projects: { entity: Project, column: 'state', resourceType: 'project' },
  apps: { entity: App, column: 'state', resourceType: 'app' },
  vpcs: { entity: Vpc, column: 'status', resourceType: 'vpc' },
  vpc_attachments: { entity: VpcAttachment, column: 'status', resourceType: 'vpc_attachment' },
  vpc_vpn_gateways: { entity: VpcVpnGateway, column: 'status', resourceType: 'vpc_vpn_gateway' },
  vpc_vpn_users: { entity: VpcVpnUser, column: 'status', resourceType: 'vpc_vpn_user' },
  vpc_site_connections: { entity: VpcSiteConnection, column: 'status', resourceType: 'vpc_site_connection' },
  buckets: { entity: Bucket, column: 'state', resourceType: 'bucket' },
  static_sites: { entity: StaticSite, column: 'state', resourceType: 'static_site' },
  stack_deployments: { entity: StackDeployment, column: 'state', resourceType: 'stack_deployment' },
  domains: { entity: CustomDomain, column: 'verification_status', resourceType: 'domain' },
  addons: { entity: Addon, column: 'state', resourceType: 'addon' },
} as const satisfies Record<string, { entity: EntityTarget<ObjectLiteral>; column: string; resourceType: string }>;

export type StatefulTable = keyof typeof STATEFUL;

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

type RowOf<T extends StatefulTable> = InstanceType<(typeof STATEFUL)[T]['entity']>;

/** Columns of the row set with its move: values, or `() => 'SQL'` for an expression. */
export type MoveAlso<T extends StatefulTable = StatefulTable> = {
  [K in keyof RowOf<T>]?: RowOf<T>[K] | (() => string);
};

/** What a moved row may carry to name its workspace, app and kind. */
interface MovedRow {
  workspace_uuid?: string;
  vpc_uuid?: string;
  app_uuid?: string | null;
  type?: string;
  kind?: string;
}

/**
 * A guarded state move: the row is moved only from one of `from` (locked while it moves), and
 * the move is recorded in the audit log with source `workflow`, actor `system`, action
 * `<resource type>.<state column>`. Rows of child tables (no workspace of their own) take their
 * VPC's or app's workspace; a row with neither (a stack deployment) is moved unrecorded. Rows of
 * the addons table are recorded as the add-on, service or cron job they are. Idempotent: a
 * retry after the move changes nothing and answers false. Joins the caller's transaction when
 * given its manager.
 */
export function moveState<T extends StatefulTable>(
  db: DataSource | EntityManager,
  t: Extract<Transition, { table: T }>,
  also: MoveAlso<T> = {},
): Promise<boolean> {
  const { entity, column, resourceType } = STATEFUL[t.table];
  return inTransaction(db, async (m) => {
    const row = (await m.findOne(entity as EntityTarget<ObjectLiteral>, {
      where: { uuid: t.uuid, [column]: In([...t.from]) },
      lock: { mode: 'pessimistic_write' },
    })) as (MovedRow & Record<string, unknown>) | null;
    if (!row) return false;
    await m
      .createQueryBuilder()
      .update(entity as EntityTarget<ObjectLiteral>)
      .set({ ...(also as ObjectLiteral), [column]: t.to, updated_at: () => 'now()' })
      .where({ uuid: t.uuid })
      .execute();
    const workspaceUuid = row.workspace_uuid ?? (await ownerWorkspace(m, row));
    if (!workspaceUuid) return true;
    const type =
      t.table === 'addons' ? (row.type === 'cronjob' ? 'cronjob' : (row.kind ?? resourceType)) : resourceType;
    await insertAuditEvent(m, {
      workspaceUuid,
      actorType: 'system',
      actorUuid: null,
      source: 'workflow',
      action: `${type}.${column}`,
      resourceType: type,
      resourceUuid: t.uuid,
      appUuid: t.table === 'apps' ? t.uuid : (row.app_uuid ?? null),
      diff: { [column]: { from: row[column], to: t.to } },
    });
    return true;
  });
}

/** The workspace of a child row: its VPC's, else its app's. */
async function ownerWorkspace(m: EntityManager, row: MovedRow): Promise<string | null> {
  if (row.vpc_uuid) return (await m.findOneBy(Vpc, { uuid: row.vpc_uuid }))?.workspace_uuid ?? null;
  if (row.app_uuid) return (await m.findOneBy(App, { uuid: row.app_uuid }))?.workspace_uuid ?? null;
  return null;
}

/** Runs `fn` in the caller's transaction, or in one of its own. */
function inTransaction<T>(db: DataSource | EntityManager, fn: (m: EntityManager) => Promise<T>): Promise<T> {
  const manager = db as Partial<EntityManager>;
  return manager.queryRunner?.isTransactionActive ? fn(db as EntityManager) : db.transaction(fn);
}
