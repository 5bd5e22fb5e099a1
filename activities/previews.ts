import { WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { PREVIEW_CLONE, PREVIEW_WAKE_SIGNAL, type PreviewStatus } from '../domain/previews';
import { workflowIdOf } from '../domain/search-attributes';
import { GIT_METHODS } from '../domain/apps';
import { App } from '../entities/app';
import { copyOf, insertAppOnce } from '../entities/app-rows';
import { insertAuditEvent } from '../entities/audit-events';
import { holdAppCapacity } from '../entities/capacity';
import type { EntityManager } from 'typeorm';
import { one, rows, type Db } from '../entities/sql';
import { createAppActivities } from './apps';
import { attemptScopedUuid } from './attempt-id';
import type { ActivityDeps } from './deps';
import { moveAppTo, moveState } from './state';

/** What the environment's workflow is asked to do, read from its row (the source of truth). */
export interface PreviewIntent {
  environmentId: number;
  status: PreviewStatus;
  appUuid: string;
  /** Deploy requests so far (the first commit, new commits, redeploys). */
  generation: number;
  headSha: string;
  /** Epoch milliseconds, or null when the environment never expires. */
  expiresAt: number | null;
}

interface EnvRow {
  id: number;
  status: PreviewStatus;
  app_uuid: string;
  app_name: string;
  parent_app_uuid: string;
  workspace_uuid: string;
  resource_uuid: string;
  project_uuid: string | null;
  use_parent_image: boolean;
  key: string;
  branch: string;
  generation: number;
  head_sha: string;
  expires_at: Date | null;
}

/** How long one attempt of destroyAppPreviews waits for environment workflows before it retries. */
const PREVIEWS_WAIT_MS = 20_000;

/** The preview's app as its first step made it. */
export interface PreviewApp {
  appUuid: string;
  parentAppUuid: string;
  /** It reads `cloning`: the parent's settings are still to be copied. */
  cloning: boolean;
}

/**
 * Activities of preview environments. The preview's app is a clone of its parent made with
 * the apps area's clone steps (copyAppSettings, provisionApp); each commit is an
 * app_deployments row that the apps area's appDeploy runs (a child of the environment's
 * workflow); destroying removes the workload through the apps driver.
 */
export function createPreviewActivities(
  deps: Pick<ActivityDeps, 'dataSource' | 'logger' | 'provider' | 'temporal' | 'secretBox' | 'config'>,
) {
  const { dataSource, logger, provider, temporal } = deps;
  const apps = createAppActivities(deps);
  async function env(id: number): Promise<EnvRow | undefined> {
    return one<EnvRow>(dataSource, `SELECT * FROM preview_environments WHERE id = $1`, [id]);
  }

  /** destroying -> gone (the workflow's step, and the deletion saga's for an environment without a running workflow). */
  async function destroyEnvironment(environmentId: number): Promise<boolean> {
    const e = await env(environmentId);
    if (!e || e.status !== 'destroying') return false;
    await provider.apps.delete(e.app_uuid);
    await dataSource.transaction(async (m) => {
      await removePreviewApp(m, e.app_uuid);
      await m.query(`DELETE FROM preview_environments WHERE id = $1 AND status = 'destroying'`, [environmentId]);
    });
    logger.info({ environmentId, appUuid: e.app_uuid }, 'preview environment destroyed');
    return true;
  }

  /** The preview app's row and its capacity (only a preview's app). */
  async function removePreviewApp(m: Db, appUuid: string): Promise<void> {
    await m.query(
      `DELETE FROM resource_allocations WHERE owner_uuid = $1
                     AND EXISTS (SELECT 1 FROM apps WHERE uuid = $1 AND preview_parent_uuid IS NOT NULL)`,
      [appUuid],
    );
    await m.query(`DELETE FROM apps WHERE uuid = $1 AND preview_parent_uuid IS NOT NULL`, [appUuid]);
  }

  /** creating/updating -> active for the latest request (an older deployment finishing records its commit but leaves `updating`). */
  async function recordDeployed(environmentId: number, generation: number, commitSha: string): Promise<boolean> {
    const moved = await rows(
      dataSource,
      `UPDATE preview_environments SET commit_sha = $3, last_deployed_at = now(), deployment_error = '', updated_at = now(),
              status = CASE WHEN generation = $2 THEN 'active' ELSE status END
        WHERE id = $1 AND status IN ('creating', 'updating') RETURNING app_uuid, status`,
      [environmentId, generation, commitSha],
    );
    if (moved[0]?.status === 'active') {
      await moveAppTo(dataSource, moved[0].app_uuid, 'running');
    }
    return moved.length > 0;
  }

  /** creating/updating -> failed with deployment_error, for the latest request. */
  async function recordFailed(environmentId: number, generation: number, error: string): Promise<boolean> {
    const moved = await rows(
      dataSource,
      `UPDATE preview_environments SET deployment_error = $3, updated_at = now(),
              status = CASE WHEN generation = $2 THEN 'failed' ELSE status END
        WHERE id = $1 AND status IN ('creating', 'updating') RETURNING app_uuid, status`,
      [environmentId, generation, error.slice(0, 1000)],
    );
    if (moved[0]?.status === 'failed') {
      await moveAppTo(dataSource, moved[0].app_uuid, 'failed');
    }
    return moved.length > 0;
  }

  /** The commit's app_deployments row on the preview app (git methods carry the commit and branch). Idempotent by uuid. */
  async function insertDeployment(e: EnvRow, deploymentUuid: string, commitSha: string): Promise<void> {
    await dataSource.query(
      `INSERT INTO app_deployments (uuid, app_uuid, workspace_uuid, deployment_method, commit_sha, branch)
       SELECT $1, a.uuid, a.workspace_uuid, a.deployment_method,
              CASE WHEN a.deployment_method = ANY($4::text[]) THEN $3 END, CASE WHEN a.deployment_method = ANY($4::text[]) THEN $5 END
         FROM apps a WHERE a.uuid = $2
       ON CONFLICT DO NOTHING`,
      [deploymentUuid, e.app_uuid, commitSha, [...GIT_METHODS], e.branch],
    );
    if (!(await one(dataSource, `SELECT 1 FROM app_deployments WHERE uuid = $1`, [deploymentUuid]))) {
      throw ApplicationFailure.retryable(
        `another deployment of preview app ${e.app_uuid} is in progress`,
        'PreviewDeploymentBusy',
      );
    }
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

  /**
   * The preview's own app row, the first step of making it: a copy of its parent (its own
   * uuid and name, fixed when the environment was written; preview_parent_uuid = the parent;
   * on the environment's resource and project; with use_parent_image it deploys the parent's
   * image, method parent_image), written by the apps table's writer in state `cloning`, with
   * its capacity held on the environment's resource as a clone's is (the parent's quota): a
   * resource without room fails the environment with the reason (the row is not made).
   * Idempotent by the app's uuid. Answers the app and whether its settings are still to be
   * copied (it reads `cloning`), or null when the environment is gone or being destroyed.
   */
  async function insertPreviewApp(environmentId: number): Promise<PreviewApp | null> {
    const e = await env(environmentId);
    if (!e || e.status === 'destroying') return null;
    return dataSource.transaction(async (m) => {
      const app = (await m.findOneBy(App, { uuid: e.app_uuid })) ?? (await insertPreviewRow(m, e));
      return { appUuid: app.uuid, parentAppUuid: e.parent_app_uuid, cloning: app.state === 'cloning' };
    });
  }

  /** The preview's app row as a copy of its parent, and its capacity. */
  async function insertPreviewRow(m: EntityManager, e: EnvRow): Promise<App> {
    const parent = await m.findOneBy(App, { uuid: e.parent_app_uuid });
    if (!parent) throw ApplicationFailure.nonRetryable('the parent app is gone', 'PreviewParentGone');
    const app = await insertAppOnce(m, {
      ...copyOf(parent, {
        uuid: e.app_uuid,
        workspace_uuid: parent.workspace_uuid,
        project_uuid: e.project_uuid,
        resource_uuid: e.resource_uuid,
        service_name: parent.service_name,
        label: `${parent.label} (${e.key})`,
        parentImage: e.use_parent_image,
        parentImageAutoSync: false,
      }),
      name: e.app_name,
      preview_parent_uuid: parent.uuid,
    });
    // another attempt wrote it meanwhile: the retry reads it
    if (!app) throw ApplicationFailure.retryable(`preview app ${e.app_uuid} was written meanwhile`, 'PreviewAppRace');
    const short = await holdAppCapacity(m, app.uuid, e.resource_uuid, app.quota);
    if (short.length > 0) {
      throw ApplicationFailure.nonRetryable(
        `not enough ${short.join(', ')} left on the compute resource for the preview app (the parent's quota)`,
        'NoCapacity',
      );
    }
    return app;
  }

  return {
    /** The environment under this key of the parent app, or null when there is none (gone). */
    async readPreviewIntent(parentAppUuid: string, key: string): Promise<PreviewIntent | null> {
      const row = await one<EnvRow>(
        dataSource,
        `SELECT * FROM preview_environments WHERE parent_app_uuid = $1 AND key = $2`,
        [parentAppUuid, key],
      );
      if (!row) return null;
      return {
        environmentId: row.id,
        status: row.status,
        appUuid: row.app_uuid,
        generation: row.generation,
        headSha: row.head_sha,
        expiresAt: row.expires_at ? new Date(row.expires_at).getTime() : null,
      };
    },

    insertPreviewApp,

    /**
     * Histories from before the preview's app was made as steps of its workflow: the same
     * steps in one activity (insertPreviewApp, the parent's settings copied, the workload
     * provisioned, cloning -> deploying).
     */
    async createPreviewApp(environmentId: number): Promise<boolean> {
      const app = await insertPreviewApp(environmentId);
      if (!app) return false;
      if (app.cloning) await apps.copyAppSettings(app.parentAppUuid, app.appUuid, PREVIEW_CLONE);
      await apps.provisionApp(app.appUuid);
      await moveState(dataSource, { table: 'apps', uuid: app.appUuid, from: ['cloning'], to: 'deploying' });
      return true;
    },

    /**
     * The commit's deployment of the preview app: an app_deployments row (uuid chosen by the
     * workflow, so a retry writes it once) that the workflow then runs with appDeploy.
     */
    async queuePreviewDeployment(input: {
      environmentId: number;
      deploymentUuid: string;
      commitSha: string;
    }): Promise<boolean> {
      const e = await env(input.environmentId);
      if (!e) throw ApplicationFailure.nonRetryable('the preview environment is gone', 'PreviewGone');
      // an environment made before preview apps were clones has no workload of the apps driver yet
      await apps.provisionApp(e.app_uuid);
      await insertDeployment(e, input.deploymentUuid, input.commitSha);
      return true;
    },

    /** Records how the commit's deployment ended on the environment: active, or failed with its reason. */
    async recordPreviewDeployment(input: {
      environmentId: number;
      generation: number;
      commitSha: string;
      deploymentUuid: string;
    }): Promise<{ ok: boolean; error: string | null }> {
      const d = await one<{ state: string; message: string | null }>(
        dataSource,
        `SELECT state, message FROM app_deployments WHERE uuid = $1`,
        [input.deploymentUuid],
      );
      if (d?.state === 'completed') {
        await recordDeployed(input.environmentId, input.generation, input.commitSha);
        return { ok: true, error: null };
      }
      const error = d?.message || `the deployment ended ${d?.state ?? 'gone'}`;
      await recordFailed(input.environmentId, input.generation, error);
      return { ok: false, error };
    },

    /**
     * Histories from before preview deployments ran through appDeploy: rolls out a commit
     * inside this activity with the apps area's deployment steps (a deployment row, build,
     * rollout with the effective environment); rejects with why the deployment failed.
     */
    async deployPreviewCommit(input: { environmentId: number; commitSha: string }): Promise<{ image: string }> {
      const e = await env(input.environmentId);
      if (!e) throw ApplicationFailure.nonRetryable('the preview environment is gone', 'PreviewGone');
      await apps.provisionApp(e.app_uuid);
      // one deployment row for every retry of this activity
      const uuid = attemptScopedUuid('preview-deploy');
      await insertDeployment(e, uuid, input.commitSha);
      await apps.beginDeployment(uuid);
      try {
        const source = await apps.resolveDeploymentSource(uuid);
        if (!source.ok) throw ApplicationFailure.nonRetryable(source.reason, 'PreviewDeployFailed');
        await apps.startDeploymentBuild(uuid);
        let image: string | null = null;
        while (!image) {
          const { build } = await apps.deploymentProgress(uuid);
          if (build.status === 'succeeded') image = build.image;
          else if (build.status !== 'building')
            throw ApplicationFailure.nonRetryable(
              build.status === 'failed' ? build.reason : 'the build was cancelled',
              'PreviewDeployFailed',
            );
          else await new Promise((resolve) => setTimeout(resolve, 1000));
        }
        await apps.rolloutImage(e.app_uuid, image);
        await apps.finishDeployment(uuid, 'completed', null);
        logger.info(
          { environmentId: e.id, appUuid: e.app_uuid, commitSha: input.commitSha },
          'preview commit deployed',
        );
        return { image };
      } catch (err) {
        await apps.finishDeployment(uuid, 'failed', err instanceof Error ? err.message : String(err));
        throw err;
      }
    },

    /** creating/updating -> active for the latest request (an older deployment finishing records its commit but leaves the newer request's `updating`). */
    async recordPreviewDeployed(input: {
      environmentId: number;
      generation: number;
      commitSha: string;
    }): Promise<boolean> {
      return recordDeployed(input.environmentId, input.generation, input.commitSha);
    },

    /** creating/updating -> failed with deployment_error, for the latest request. */
    async recordPreviewFailed(input: { environmentId: number; generation: number; error: string }): Promise<boolean> {
      return recordFailed(input.environmentId, input.generation, input.error);
    },

    /** expires_at reached (the workflow's timer decides): -> destroying. */
    async expirePreview(environmentId: number): Promise<boolean> {
      const moved = await rows(
        dataSource,
        `UPDATE preview_environments SET status = 'destroying', updated_at = now()
          WHERE id = $1 AND status IN ('creating', 'active', 'updating', 'failed') RETURNING id`,
        [environmentId],
      );
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
        const parent = await one<{ workspace_uuid: string }>(
          m,
          `SELECT workspace_uuid FROM apps WHERE uuid = $1 AND state = 'deleting' FOR UPDATE`,
          [parentAppUuid],
        );
        if (!parent) return null;
        const found = await rows<{ id: number; app_uuid: string; from_status: string }>(
          m,
          `WITH old AS (SELECT id, status FROM preview_environments WHERE parent_app_uuid = $1 AND status <> 'destroying' FOR UPDATE)
           UPDATE preview_environments p SET status = 'destroying', updated_at = now() FROM old WHERE p.id = old.id
           RETURNING p.id, p.app_uuid, old.status AS from_status`,
          [parentAppUuid],
        );
        for (const e of found) {
          await insertAuditEvent(m, {
            workspaceUuid: parent.workspace_uuid,
            actorType: 'system',
            actorUuid: null,
            source: 'workflow',
            action: 'preview.destroy',
            resourceType: 'preview',
            resourceUuid: e.app_uuid,
            appUuid: parentAppUuid,
            diff: { status: { from: e.from_status, to: 'destroying' } },
          });
        }
        return found;
      });
      if (moved === null) return 0;
      const keys = new Set<string>();
      const deadline = Date.now() + PREVIEWS_WAIT_MS;
      for (let first = true; ; first = false) {
        const left = await rows<{ id: number; key: string }>(
          dataSource,
          `SELECT id, key FROM preview_environments WHERE parent_app_uuid = $1 ORDER BY id`,
          [parentAppUuid],
        );
        for (const e of left) {
          keys.add(e.key);
          if (first) await wake(parentAppUuid, e.key);
        }
        const running: string[] = [];
        for (const key of keys) if (await workflowRunning(parentAppUuid, key)) running.push(key);
        for (const e of left) if (!running.includes(e.key)) await destroyEnvironment(e.id);
        // Preview apps whose environment row is gone some other way (they would outlive the parent).
        const strays = await rows<{ uuid: string }>(
          dataSource,
          `SELECT a.uuid FROM apps a WHERE a.preview_parent_uuid = $1
              AND NOT EXISTS (SELECT 1 FROM preview_environments p WHERE p.app_uuid = a.uuid)`,
          [parentAppUuid],
        );
        for (const a of strays) {
          await provider.apps.delete(a.uuid);
          await removePreviewApp(dataSource, a.uuid);
        }
        if (running.length === 0 && left.length === 0) break;
        if (Date.now() > deadline) {
          throw ApplicationFailure.retryable(
            `${running.length} preview environment workflows of app ${parentAppUuid} are still destroying`,
            'PreviewsDestroying',
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      logger.info(
        { appUuid: parentAppUuid, moved: moved.length, environments: keys.size },
        'preview environments of a deleted app destroyed',
      );
      return moved.length;
    },
  };
}
