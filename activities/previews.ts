import { ApplicationFailure } from '@temporalio/common';
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

/**
 * Activities of preview environments. The preview's app row and its deployments are
 * written here with the PreviewDriver of the data plane; once the apps area provides app
 * cloning and deployments, createPreviewApp should clone through it and deployPreviewCommit
 * deploy through its deployments.
 */
export function createPreviewActivities({ dataSource, logger, provider }: Pick<ActivityDeps, 'dataSource' | 'logger' | 'provider'>) {
  async function env(id: number): Promise<EnvRow | undefined> {
    return one<EnvRow>(dataSource, `SELECT * FROM preview_environments WHERE id = $1`, [id]);
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
      const e = await env(environmentId);
      if (!e || e.status !== 'destroying') return false;
      await provider.previews.destroy(e.app_uuid);
      await dataSource.transaction(async (m) => {
        await m.query(`DELETE FROM apps WHERE uuid = $1 AND preview_parent_uuid IS NOT NULL`, [e.app_uuid]);
        await m.query(`DELETE FROM preview_environments WHERE id = $1 AND status = 'destroying'`, [environmentId]);
      });
      logger.info({ environmentId, appUuid: e.app_uuid }, 'preview environment destroyed');
      return true;
    },
  };
}
