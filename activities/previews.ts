import { WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { PREVIEW_WAKE_SIGNAL } from '../domain/previews';
import { workflowIdOf } from '../domain/search-attributes';
import { insertAuditEvent } from '../entities/audit-events';
import { one, rows } from '../entities/sql';
import type { ActivityDeps } from './deps';
import { moveAppTo } from './state';

/** What the environment's workflow is asked to do, read from its row (the source of truth). */
export interface PreviewIntent {
  environmentId: number;
  status: string;
  appUuid: string;
  /** Deploy requests so far (the first commit, new commits, redeploys). */
  generation: number;
  headSha: string;
  /** Epoch milliseconds, or null when the environment never expires. */
  expiresAt: number | null;
}

interface EnvRow {
  id: number;
  status: string;
  app_uuid: string;
  app_name: string;
  parent_app_uuid: string;
  workspace_uuid: string;
  resource_uuid: string;
  project_uuid: string | null;
  use_parent_image: boolean;
  key: string;
  generation: number;
  head_sha: string;
  expires_at: Date | null;
}

/** How long one attempt of destroyAppPreviews waits for environment workflows before it retries. */
const PREVIEWS_WAIT_MS = 20_000;

/**
 * Activities of preview environments. The preview's app row and its deployments are
 * written here with the PreviewDriver of the data plane; once the apps area provides app
 * cloning and deployments, createPreviewApp should clone through it and deployPreviewCommit
 * deploy through its deployments.
 */
export function createPreviewActivities({ dataSource, logger, provider, temporal }: Pick<ActivityDeps, 'dataSource' | 'logger' | 'provider' | 'temporal'>) {
  async function env(id: number): Promise<EnvRow | undefined> {
    return one<EnvRow>(dataSource, `SELECT * FROM preview_environments WHERE id = $1`, [id]);
  }

  /** destroying -> gone (the workflow's step, and the deletion saga's for an environment without a running workflow). */
  async function destroyEnvironment(environmentId: number): Promise<boolean> {
    const e = await env(environmentId);
    if (!e || e.status !== 'destroying') return false;
    await provider.previews.destroy(e.app_uuid);
    await dataSource.transaction(async (m) => {
      await m.query(`DELETE FROM apps WHERE uuid = $1 AND preview_parent_uuid IS NOT NULL`, [e.app_uuid]);
      await m.query(`DELETE FROM preview_environments WHERE id = $1 AND status = 'destroying'`, [environmentId]);
    });
    logger.info({ environmentId, appUuid: e.app_uuid }, 'preview environment destroyed');
    return true;
  }

  /** The environment workflow `preview/<parent>/<key>`: whether a run of it is open. */
  async function workflowRunning(parentAppUuid: string, key: string): Promise<boolean> {
    try {
      const run = await temporal.workflow.getHandle(workflowIdOf('preview', parentAppUuid, key)).describe();
      return run.status.name === 'RUNNING';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  async function wake(parentAppUuid: string, key: string): Promise<void> {
    try {
      await temporal.workflow.getHandle(workflowIdOf('preview', parentAppUuid, key)).signal(PREVIEW_WAKE_SIGNAL);
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }

  return {
    /** The environment under this key of the parent app, or null when there is none (gone). */
    async readPreviewIntent(parentAppUuid: string, key: string): Promise<PreviewIntent | null> {
      const row = await one<EnvRow>(dataSource,
        `SELECT * FROM preview_environments WHERE parent_app_uuid = $1 AND key = $2`, [parentAppUuid, key]);
      if (!row) return null;
      return {
        environmentId: row.id, status: row.status, appUuid: row.app_uuid, generation: row.generation, headSha: row.head_sha,
        expiresAt: row.expires_at ? new Date(row.expires_at).getTime() : null,
      };
    },

    /**
     * The preview's own app (an apps row with preview_parent_uuid = the parent), then its
     * workload from the parent's. Idempotent: the app's uuid and name were fixed when the
     * environment was written.
     */
    async createPreviewApp(environmentId: number): Promise<boolean> {
      const e = await env(environmentId);
      if (!e || e.status === 'destroying') return false;
      await dataSource.query(
        `INSERT INTO apps (uuid, workspace_uuid, project_id, resource_uuid, name, service_name, label, state, preview_parent_uuid)
         SELECT $1, p.workspace_uuid, $2, $3, $4, p.service_name, p.label || ' (' || $5 || ')', 'deploying', p.uuid
           FROM apps p WHERE p.uuid = $6
         ON CONFLICT (uuid) DO NOTHING`,
        [e.app_uuid, e.project_uuid, e.resource_uuid, e.app_name, e.key, e.parent_app_uuid]);
      await provider.previews.provision({
        appUuid: e.app_uuid, parentAppUuid: e.parent_app_uuid, resourceUuid: e.resource_uuid, useParentImage: e.use_parent_image,
      });
      return true;
    },

    /** Rolls out a commit on the preview's workload; rejects with why the deployment failed. */
    async deployPreviewCommit(input: { environmentId: number; commitSha: string }): Promise<{ image: string }> {
      const e = await env(input.environmentId);
      if (!e) throw ApplicationFailure.nonRetryable('the preview environment is gone', 'PreviewGone');
      await moveAppTo(dataSource, e.app_uuid, 'deploying');
      const result = await provider.previews.deploy({ appUuid: e.app_uuid, commitSha: input.commitSha });
      logger.info({ environmentId: e.id, appUuid: e.app_uuid, commitSha: input.commitSha }, 'preview commit deployed');
      return result;
    },

    /**
     * creating/updating -> active for the latest request (an older deployment finishing
     * records its commit but leaves the newer request's `updating`).
     */
    async recordPreviewDeployed(input: { environmentId: number; generation: number; commitSha: string }): Promise<boolean> {
      const moved = await rows(dataSource,
        `UPDATE preview_environments SET commit_sha = $3, last_deployed_at = now(), deployment_error = '', updated_at = now(),
                status = CASE WHEN generation = $2 THEN 'active' ELSE status END
          WHERE id = $1 AND status IN ('creating', 'updating') RETURNING app_uuid, status`,
        [input.environmentId, input.generation, input.commitSha]);
      if (moved[0]?.status === 'active') {
        await moveAppTo(dataSource, moved[0].app_uuid, 'running');
      }
      return moved.length > 0;
    },

    /** creating/updating -> failed with deployment_error, for the latest request. */
    async recordPreviewFailed(input: { environmentId: number; generation: number; error: string }): Promise<boolean> {
      const moved = await rows(dataSource,
        `UPDATE preview_environments SET deployment_error = $3, updated_at = now(),
                status = CASE WHEN generation = $2 THEN 'failed' ELSE status END
          WHERE id = $1 AND status IN ('creating', 'updating') RETURNING app_uuid, status`,
        [input.environmentId, input.generation, input.error.slice(0, 1000)]);
      if (moved[0]?.status === 'failed') {
        await moveAppTo(dataSource, moved[0].app_uuid, 'failed');
      }
      return moved.length > 0;
    },

    /** expires_at reached (the workflow's timer decides): -> destroying. */
    async expirePreview(environmentId: number): Promise<boolean> {
      const moved = await rows(dataSource,
        `UPDATE preview_environments SET status = 'destroying', updated_at = now()
          WHERE id = $1 AND status IN ('creating', 'active', 'updating', 'failed') RETURNING id`, [environmentId]);
      return moved.length > 0;
    },

    /** destroying -> gone: removes the workload, the preview's app and the environment. */
    async destroyPreviewApp(environmentId: number): Promise<boolean> {
      return destroyEnvironment(environmentId);
    },

    /**
     * For the app deletion saga, before the app's own rows go: every preview environment of
     * a parent app being deleted is destroyed through the path a preview deletion takes.
     * Each moves to destroying (recorded in the audit log, source workflow) and its workflow
     * is woken: it removes the preview's workload and app and ends `gone`. An environment
     * without a running workflow (its start still in the outbox, or its run terminated) is
     * destroyed here with the workflow's own step; a workflow started later finds no row
     * and ends. The activity answers once no environment and no environment workflow of the
     * parent is left; until then it fails retryably (the saga retries it). Idempotent: a
     * retry moves nothing twice and destroys only what is left. Answers how many
     * environments it moved to destroying; 0 for an app that is not being deleted.
     */
    async destroyAppPreviews(parentAppUuid: string): Promise<number> {
      const moved = await dataSource.transaction(async (m) => {
        const parent = await one<{ workspace_uuid: string }>(m,
          `SELECT workspace_uuid FROM apps WHERE uuid = $1 AND state = 'deleting' FOR UPDATE`, [parentAppUuid]);
        if (!parent) return null;
        const found = await rows<{ id: number; app_uuid: string; from_status: string }>(m,
          `WITH old AS (SELECT id, status FROM preview_environments WHERE parent_app_uuid = $1 AND status <> 'destroying' FOR UPDATE)
           UPDATE preview_environments p SET status = 'destroying', updated_at = now() FROM old WHERE p.id = old.id
           RETURNING p.id, p.app_uuid, old.status AS from_status`, [parentAppUuid]);
        for (const e of found) {
          await insertAuditEvent(m, {
            workspaceUuid: parent.workspace_uuid, actorType: 'system', actorUuid: null, source: 'workflow', action: 'preview.destroy',
            resourceType: 'preview', resourceUuid: e.app_uuid, appUuid: parentAppUuid,
            diff: { status: { from: e.from_status, to: 'destroying' } },
          });
        }
        return found;
      });
      if (moved === null) return 0;
      const keys = new Set<string>();
      const deadline = Date.now() + PREVIEWS_WAIT_MS;
      for (let first = true; ; first = false) {
        const left = await rows<{ id: number; key: string }>(dataSource,
          `SELECT id, key FROM preview_environments WHERE parent_app_uuid = $1 ORDER BY id`, [parentAppUuid]);
        for (const e of left) {
          keys.add(e.key);
          if (first) await wake(parentAppUuid, e.key);
        }
        const running: string[] = [];
        for (const key of keys) if (await workflowRunning(parentAppUuid, key)) running.push(key);
        for (const e of left) if (!running.includes(e.key)) await destroyEnvironment(e.id);
        // Preview apps whose environment row is gone some other way (they would outlive the parent).
        const strays = await rows<{ uuid: string }>(dataSource,
          `SELECT a.uuid FROM apps a WHERE a.preview_parent_uuid = $1
              AND NOT EXISTS (SELECT 1 FROM preview_environments p WHERE p.app_uuid = a.uuid)`, [parentAppUuid]);
        for (const a of strays) {
          await provider.previews.destroy(a.uuid);
          await dataSource.query(`DELETE FROM apps WHERE uuid = $1 AND preview_parent_uuid = $2`, [a.uuid, parentAppUuid]);
        }
        if (running.length === 0 && left.length === 0) break;
        if (Date.now() > deadline) {
          throw ApplicationFailure.retryable(`${running.length} preview environment workflows of app ${parentAppUuid} are still destroying`, 'PreviewsDestroying');
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      logger.info({ appUuid: parentAppUuid, moved: moved.length, environments: keys.size }, 'preview environments of a deleted app destroyed');
      return moved.length;
    },
  };
}
