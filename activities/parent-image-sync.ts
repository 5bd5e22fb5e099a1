import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import type { EntityManager } from 'typeorm';
import { DEPLOYABLE_STATES } from '../domain/apps';
import { rows } from '../entities/sql';
import { Outbox, type EnqueuedOperation } from '../platform/outbox';
import type { ActivityDeps } from './deps';

function currentTaskQueue(fallback: string): string {
  try {
    return Context.current().info.taskQueue;
  } catch {
    return fallback;
  }
}

/**
 * `parent_image_auto_sync` (CLN-02): when a parent's deployment completes, each clone that
 * follows its image (parent_image method, auto sync on, not a preview app, in a deployable
 * state, no deployment of its own in progress) gets a parent_image deployment, written
 * with its outbox row in the caller's transaction. Answers the queued operations, to
 * dispatch after commit (the reconciler starts any a crash leaves).
 */
export function parentImageSync({
  dataSource,
  temporal,
  logger,
  config,
}: Pick<ActivityDeps, 'dataSource' | 'temporal' | 'logger' | 'config'>) {
  const outbox = () => new Outbox(dataSource, temporal, { taskQueue: currentTaskQueue(config.taskQueue), logger });
  return {
    async queue(m: EntityManager, parentUuid: string): Promise<EnqueuedOperation[]> {
      const box = outbox();
      const clones = await rows<{ uuid: string; workspace_uuid: string }>(
        m,
        `SELECT uuid, workspace_uuid FROM apps WHERE parent_app_uuid = $1 AND parent_image_auto_sync AND deployment_method = 'parent_image'
            AND preview_parent_uuid IS NULL AND state = ANY($2) ORDER BY created_at FOR UPDATE`,
        [parentUuid, DEPLOYABLE_STATES],
      );
      const ops: EnqueuedOperation[] = [];
      for (const clone of clones) {
        const uuid = randomUUID();
        const inserted = await rows(
          m,
          `INSERT INTO app_deployments (uuid, app_uuid, workspace_uuid, deployment_method) VALUES ($1, $2, $3, 'parent_image')
           ON CONFLICT DO NOTHING RETURNING uuid`,
          [uuid, clone.uuid, clone.workspace_uuid],
        );
        if (inserted.length === 0) continue;
        const op = await box.enqueue(m, {
          operation: 'app-deploy',
          workflow: 'appDeploy',
          workspaceUuid: clone.workspace_uuid,
          resourceUuid: clone.uuid,
          subId: uuid,
          taskQueue: currentTaskQueue(config.taskQueue),
          args: [{ deploymentUuid: uuid }],
        });
        ops.push(op);
      }
      return ops;
    },
    dispatch: (ops: EnqueuedOperation[]) => outbox().dispatch(...ops),
  };
}
