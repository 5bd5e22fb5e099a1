import { randomUUID } from 'node:crypto';
import { WorkflowIdConflictPolicy, WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { DataSource, EntityManager } from 'typeorm';
import { operationSearchAttributes, workflowIdOf } from '../domain/search-attributes';

export interface OperationRequest {
  /** Operation name, also the first part of the workflow id (e.g. `project-delete`). */
  operation: string;
  /** Exported workflow function name in workflows/. */
  workflowType: string;
  workspaceUuid: string;
  resourceUuid: string;
  /** Optional third part of the workflow id. */
  subId?: string;
  /** Workflow arguments: identifiers only, never secrets. */
  args: unknown[];
  taskQueue?: string;
  /**
   * Send this signal with a signal-with-start instead of a plain start: a running
   * workflow gets the signal, a closed or missing one is started (again, as a new run) and
   * gets it. Arguments: identifiers only. Unlike a start, a signal is not idempotent: an
   * operation is sent at least once.
   */
  signal?: { name: string; args?: unknown[] };
}

interface OperationRow {
  uuid: string;
  workflow_id: string;
  workflow_type: string;
  operation: string;
  workspace_uuid: string;
  resource_uuid: string;
  args: unknown[];
  task_queue: string;
  signal: string | null;
  signal_args: unknown[];
}

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

  async enqueue(manager: EntityManager, req: OperationRequest): Promise<{ uuid: string; workflowId: string }> {
    const uuid = randomUUID();
    const workflowId = workflowIdOf(req.operation, req.resourceUuid, req.subId);
    await manager.query(
      `INSERT INTO operations (uuid, workflow_id, workflow_type, operation, workspace_uuid, resource_uuid, args, task_queue, signal, signal_args)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [uuid, workflowId, req.workflowType, req.operation, req.workspaceUuid, req.resourceUuid, JSON.stringify(req.args),
        req.taskQueue ?? this.options.taskQueue, req.signal?.name ?? null, JSON.stringify(req.signal?.args ?? [])],
    );
    return { uuid, workflowId };
  }

  /** Starts the given operations now. Failures are logged and left to the reconciler. */
  async dispatch(...uuids: string[]): Promise<void> {
    if (uuids.length === 0) return;
    const rows: OperationRow[] = await this.ds.query(
      `SELECT * FROM operations WHERE uuid = ANY($1::uuid[]) AND started_at IS NULL ORDER BY created_at`,
      [uuids],
    );
    for (const row of rows) await this.start(row);
  }

  /**
   * Starts every operation left unstarted for longer than `graceMs`. Rows are claimed
   * with SKIP LOCKED so several workers can reconcile side by side.
   */
  async reconcile(graceMs: number, limit = 100): Promise<number> {
    let started = 0;
    await this.ds.transaction(async (m) => {
      const rows: OperationRow[] = await m.query(
        `SELECT * FROM operations
          WHERE started_at IS NULL AND created_at < now() - ($1::double precision * interval '1 millisecond')
          ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
        [graceMs, limit],
      );
      for (const row of rows) if (await this.start(row, m)) started++;
    });
    return started;
  }

  private async start(row: OperationRow, manager?: EntityManager): Promise<boolean> {
    const db = manager ?? this.ds;
    try {
      const options = {
        workflowId: row.workflow_id,
        taskQueue: row.task_queue,
        args: row.args,
        typedSearchAttributes: operationSearchAttributes(row.workspace_uuid, row.resource_uuid, row.operation),
      };
      if (row.signal) {
        await this.client.workflow.signalWithStart(row.workflow_type, {
          ...options, signal: row.signal, signalArgs: row.signal_args, workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
        });
      } else {
        await this.client.workflow.start(row.workflow_type, { ...options, workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING });
      }
      await db.query(`UPDATE operations SET started_at = now(), start_attempts = start_attempts + 1, last_error = NULL WHERE uuid = $1`, [row.uuid]);
      return true;
    } catch (err) {
      this.options.logger.warn({ err, operation: row.operation, workflowId: row.workflow_id }, 'workflow start failed; the reconciler will retry');
      await db.query(`UPDATE operations SET start_attempts = start_attempts + 1, last_error = $2 WHERE uuid = $1`,
        [row.uuid, String((err as Error).message ?? err).slice(0, 500)]);
      return false;
    }
  }
}
