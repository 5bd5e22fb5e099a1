import type { EntityManager, EntityTarget } from 'typeorm';
import { diffRecords, type AuditSource } from '../../domain/audit';
import { insertAuditEvent, type AuditEventRow } from '../../entities/audit-events';
import type { WorkflowName } from '../../platform/workflow-starts';
import { deleteReturning, type Db } from '../../entities/sql';
import type { ApiDeps, Caller } from '../context';
import type { EnqueuedOperation, OperationRequest } from '../../platform/outbox';
import { notFound } from '../problem';
import type { AnyRouteContext } from '../route';

/** Whom an audit entry names and where the change came from (a request, a code-host delivery). */
export interface Origin {
  workspaceUuid: string;
  actorType: AuditEventRow['actorType'];
  actorUuid: string | null;
  source: AuditSource;
  requestId: string | null;
  clientIp: string | null;
  userAgent: string | null;
}

/** The origin of a change a caller asked for: the member, or the workspace token by its uuid (never the token). */
export function callerOrigin(
  caller: Caller,
  request: { requestId?: string | null; clientIp?: string | null; userAgent?: string | null } = {},
): Origin {
  return {
    workspaceUuid: caller.workspaceUuid,
    actorType: caller.memberUuid ? 'member' : 'workspace_token',
    actorUuid: caller.memberUuid ?? caller.tokenUuid,
    source: 'api',
    requestId: request.requestId ?? null,
    clientIp: request.clientIp ?? null,
    userAgent: request.userAgent ?? null,
  };
}

/** The origin of a route's request: its caller, request id, client IP and user agent. */
export function requestOrigin(ctx: Pick<AnyRouteContext, 'caller' | 'requestId' | 'koa'>): Origin {
  return callerOrigin(ctx.caller, {
    requestId: ctx.requestId,
    clientIp: ctx.koa.ip || null,
    userAgent: (ctx.koa.get('user-agent') || '').slice(0, 500) || null,
  });
}

/** One audit entry: the action, the resource, and snapshots of the record before and after (null for a create / a delete). */
export interface AuditRecord {
  /** `<resource type>.<verb>`: the action the route serving the command declares. */
  action: string;
  /** By default the action's first part (`bucket` of `bucket.create`). */
  resourceType?: string;
  resourceUuid: string | null;
  /** The app the change concerns; by default the resource itself when it is an app, else the app owning the snapshot's row. */
  appUuid?: string | null;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
  /** Record nothing when before and after do not differ (a delivery that changed nothing). */
  skipWhenUnchanged?: boolean;
}

/** The app a change concerns: the app itself, else the app owning the row (a preview's parent app). */
function owningApp(record: AuditRecord, resourceType: string): string | null {
  if (resourceType === 'app') return record.resourceUuid;
  const row = record.after ?? record.before;
  const owner = row?.parent_app_uuid ?? row?.app_uuid;
  return typeof owner === 'string' ? owner : null;
}

/**
 * Writes one audit entry in the transaction of its change (a rolled-back change leaves none):
 * actor, action, resource, the field-level diff with secrets redacted, and the request.
 */
export async function writeAuditEntry(db: Db, origin: Origin, record: AuditRecord): Promise<void> {
  const diff = diffRecords(record.before ?? null, record.after ?? null);
  if (record.skipWhenUnchanged && Object.keys(diff).length === 0) return;
  const resourceType = record.resourceType ?? record.action.split('.')[0]!;
  await insertAuditEvent(db, {
    ...origin,
    action: record.action,
    resourceType,
    resourceUuid: record.resourceUuid,
    appUuid: record.appUuid ?? owningApp(record, resourceType),
    diff,
  });
}

/** A row read or written through TypeORM as the plain JSON an audit diff compares. */
export function snapshotOf(row: object | null | undefined): Record<string, unknown> | null {
  return row ? (JSON.parse(JSON.stringify(row)) as Record<string, unknown>) : null;
}

/** What a command is given: the transaction, the deps, and the steps of an audited write. */
export interface Tx {
  /** The transaction's entity manager: every read and write of the command goes through it. */
  readonly m: EntityManager;
  readonly deps: ApiDeps;
  /** Records the command's audit entry in this transaction. */
  audit(record: AuditRecord): Promise<void>;
  /** Writes a typed workflow start (outbox row) in this transaction; it is started once the transaction has committed. */
  enqueue<N extends WorkflowName>(req: OperationRequest<N>): Promise<EnqueuedOperation>;
  /** Starts, after commit, an operation a helper enqueued in this transaction on its own. */
  dispatchAfter(operation: EnqueuedOperation): void;
  /** Runs once the transaction has committed (after the starts): a signal, a wake-up. */
  afterCommit(step: () => Promise<void>): void;
}

/** What a transaction left to do once it has committed. */
export interface AfterCommit {
  starts: EnqueuedOperation[];
  steps: Array<() => Promise<void>>;
}

/** A Tx over a transaction the caller holds (tests call commands inside a transaction of their own this way). */
export function openTx(
  m: EntityManager,
  deps: ApiDeps,
  origin: Origin,
  later: AfterCommit = { starts: [], steps: [] },
): Tx {
  return {
    m,
    deps,
    audit: (record) => writeAuditEntry(m, origin, record),
    async enqueue(req) {
      const op = await deps.outbox.enqueue(m, req);
      later.starts.push(op);
      return op;
    },
    dispatchAfter: (op) => {
      later.starts.push(op);
    },
    afterCommit: (step) => {
      later.steps.push(step);
    },
  };
}

/**
 * The audited write, once for every command: opens a transaction, runs the command in it
 * (its reads, rules, writes, audit entry and workflow starts), commits, then starts the
 * workflows it enqueued (a failed start is left to the outbox's reconciler) and runs its
 * after-commit steps. A refusal thrown by the command rolls everything back.
 */
export async function auditedWrite<T>(deps: ApiDeps, origin: Origin, command: (tx: Tx) => Promise<T>): Promise<T> {
  const later: AfterCommit = { starts: [], steps: [] };
  const result = await deps.dataSource.transaction((m) => command(openTx(m, deps, origin, later)));
  await deps.outbox.dispatch(...later.starts);
  for (const step of later.steps) await step();
  return result;
}

/** The audited write of a route's request (its caller and request as the origin). */
export function write<T>(ctx: AnyRouteContext, command: (tx: Tx) => Promise<T>): Promise<T> {
  return auditedWrite(ctx.deps, requestOrigin(ctx), command);
}

/**
 * Deletes the row `uuid` of the caller's workspace and records `action` with the row as it
 * was, from the delete itself: of two concurrent deletes, the second finds nothing (404 `what`).
 */
export async function deleteOfWorkspace<E extends { uuid: string; workspace_uuid: string }>(
  tx: Tx,
  caller: Caller,
  target: EntityTarget<E>,
  input: { uuid: string; action: string; what: string },
): Promise<E> {
  const [deleted] = await deleteReturning(tx.m, target, 'uuid = :uuid AND workspace_uuid = :workspace', {
    uuid: input.uuid,
    workspace: caller.workspaceUuid,
  });
  if (!deleted) throw notFound(input.what);
  await tx.audit({ action: input.action, resourceUuid: deleted.uuid, before: snapshotOf(deleted), after: null });
  return deleted;
}
