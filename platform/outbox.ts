import { randomUUID } from 'node:crypto';
import {
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
  WorkflowNotFoundError,
  type Client,
} from '@temporalio/client';
import type { Logger } from 'pino';
import type { DataSource, EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { Operation } from '../entities/operation';
import { operationStart, type OperationTarget } from '../domain/search-attributes';
import type { WorkflowArgs, WorkflowName } from './workflow-starts';

/**
 * One workflow start: which workflow with which arguments (typed from the workflow
 * function, so a wrong argument is a compile error) for which operation (`OperationTarget`:
 * the workflow id and search attributes come from it).
 */
export type OperationRequest<N extends WorkflowName = WorkflowName> = OperationTarget & {
  /** The workflow's exported function name in workflows/. */
  workflow: N;
  /** Workflow arguments: identifiers only, never secrets. */
  args: WorkflowArgs<N>;
  taskQueue?: string;
  /**
   * Send this signal with a signal-with-start instead of a plain start: a running
   * workflow gets the signal, a closed or missing one is started (again, as a new run) and
   * gets it. Arguments: identifiers only. Unlike a start, a signal is not idempotent: an
   * operation is sent at least once.
   */
  signal?: { name: string; args?: unknown[] };
};

/** An operation `enqueue` wrote; hand it to `dispatch` once the transaction committed. */
export interface EnqueuedOperation {
  uuid: string;
  workflowId: string;
  /** The row as written, so `dispatch` starts it without reading it back. */
  readonly row: OperationRow;
}

/** What `enqueue` writes of an outbox row (its entity, less the bookkeeping `start` fills in). */
export type OperationRow = Pick<
  Operation,
  | 'uuid'
  | 'workflow_id'
  | 'workflow_type'
  | 'operation'
  | 'workspace_uuid'
  | 'resource_uuid'
  | 'args'
  | 'task_queue'
  | 'signal'
  | 'signal_args'
>;

/**
 * Durable workflow starts. `enqueue` writes an outbox row in the caller's transaction;
 * `dispatch` starts the workflow after commit; `reconcile` starts rows a crash left
 * behind. A start is idempotent: the workflow id is deterministic and an existing run is
 * used as is (conflict policy USE_EXISTING). An operation with a `signal` is sent as a
 * signal-with-start under the same id instead.
 */
export class Outbox {
  constructor(
    private readonly ds: DataSource,
    private readonly client: Client,
    private readonly options: { taskQueue: string; logger: Logger },
  ) {}

  /** Rows this process started: a second `dispatch` of one is a no-op (as re-reading its started row was). */
  private readonly dispatched = new WeakSet<OperationRow>();

  async enqueue<N extends WorkflowName>(manager: EntityManager, req: OperationRequest<N>): Promise<EnqueuedOperation> {
    const row: OperationRow = {
      uuid: randomUUID(),
      workflow_id: operationStart(req).workflowId,
      workflow_type: req.workflow,
      operation: req.operation,
      workspace_uuid: req.workspaceUuid,
      resource_uuid: req.resourceUuid,
      args: req.args,
      task_queue: req.taskQueue ?? this.options.taskQueue,
      signal: req.signal?.name ?? null,
      signal_args: req.signal?.args ?? [],
    };
    // args are typed per workflow (OperationRequest); the jsonb column holds them as they are.
    const values = row as QueryDeepPartialEntity<Operation>;
    await manager.createQueryBuilder().insert().into(Operation).values(values).updateEntity(false).execute();
    return { uuid: row.uuid, workflowId: row.workflow_id, row };
  }

  /**
   * Whether an operation under `workflowId` is under way: its start still in the outbox (read
   * with `manager`, so a row committed before the caller's lock counts), or its workflow running.
   * For operations one at a time per resource (a second is refused while the first runs).
   */
  async inFlight(manager: EntityManager, workflowId: string): Promise<boolean> {
    const queued = await manager
      .createQueryBuilder(Operation, 'o')
      .where('o.workflow_id = :workflowId AND o.started_at IS NULL', { workflowId })
      .getExists();
    if (queued) return true;
    try {
      return (await this.client.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  /**
   * Starts the given operations now, from the rows `enqueue` returned (call it after their
   * transaction committed); one started already is not started again. Failures are logged and left to
   * the reconciler, which also starts any operation never dispatched (a crash after commit).
   */
  async dispatch(...ops: EnqueuedOperation[]): Promise<void> {
    for (const op of ops) {
      if (this.dispatched.has(op.row)) continue;
      this.dispatched.add(op.row);
      if (!(await this.start(op.row))) this.dispatched.delete(op.row);
    }
  }

  /**
   * Starts every operation left unstarted for longer than `graceMs`. Rows are claimed
   * with SKIP LOCKED so several workers can reconcile side by side.
   */
  async reconcile(graceMs: number, limit = 100): Promise<number> {
    let started = 0;
    await this.ds.transaction(async (m) => {
      const rows = await m
        .createQueryBuilder(Operation, 'o')
        .where('o.started_at IS NULL')
        .andWhere(`o.created_at < now() - (:graceMs::double precision * interval '1 millisecond')`, { graceMs })
        .orderBy('o.created_at')
        .limit(limit)
        .setLock('pessimistic_write')
        .setOnLocked('skip_locked')
        .getMany();
      for (const row of rows) if (await this.start(row, m)) started++;
    });
    return started;
  }

  private async start(row: OperationRow, manager?: EntityManager): Promise<boolean> {
    const db = manager ?? this.ds;
    try {
      const options = {
        ...operationStart({
          operation: row.operation,
          workspaceUuid: row.workspace_uuid,
          resourceUuid: row.resource_uuid,
        }),
        workflowId: row.workflow_id,
        taskQueue: row.task_queue,
        args: row.args,
      };
      if (row.signal) {
        await this.client.workflow.signalWithStart(row.workflow_type, {
          ...options,
          signal: row.signal,
          signalArgs: row.signal_args,
          workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
        });
      } else {
        await this.client.workflow.start(row.workflow_type, {
          ...options,
          workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
        });
      }
      await this.mark(db, row, { started_at: () => 'now()', last_error: null });
      return true;
    } catch (err) {
      this.options.logger.warn(
        { err, operation: row.operation, workflowId: row.workflow_id },
        'workflow start failed; the reconciler will retry',
      );
      await this.mark(db, row, { last_error: String((err as Error).message ?? err).slice(0, 500) });
      return false;
    }
  }

  /** Counts a start attempt on the row, with what it changed. */
  private async mark(db: DataSource | EntityManager, row: OperationRow, set: QueryDeepPartialEntity<Operation>) {
    await db
      .createQueryBuilder()
      .update(Operation)
      .set({ ...set, start_attempts: () => 'start_attempts + 1' })
      .where('uuid = :uuid', { uuid: row.uuid })
      .execute();
  }
}
