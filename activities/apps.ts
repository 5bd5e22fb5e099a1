import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { deploysBranchHeadAtCreation, isGitMethod, type AppState, type LiveStatus } from '../domain/apps';
import { diffRecords } from '../domain/audit';
import { insertAuditEvent } from '../entities/audit-events';
import { one, rows } from '../entities/sql';
import { appRunSpec } from './app-environment';
import { whileHeartbeating } from './heartbeat';
import type { ActivityDeps } from './deps';
import { branchHead, commitSubject, GitError } from './git';
import type { AppRuntimeStatus, AppSpec, BuildStatus } from '../platform/drivers/apps';
import { parentImageSync } from './parent-image-sync';
import { openRegistryCredential, openWorkspaceRegistryLogins } from './registry-credentials';
import { moveAppTo, moveState } from './state';
import { plugInAppNetworks } from './vpc';

/** What app workflows need to know about an app (no secrets). */
export interface AppInfo {
  appUuid: string;
  workspaceUuid: string;
  state: AppState;
  planType: string;
  resourceName: string;
  labels: string[];
  /** Absent in histories recorded before it was read (the app's first deployment at creation). */
  deploymentMethod?: string;
  /** Free-plan idle time before the app sleeps (BERTH_APP_IDLE_TIMEOUT_S; the contract's 30 minutes by default). */
  idleMs: number;
}

export interface DeploymentStart {
  appUuid: string;
  workspaceUuid: string;
  method: string;
  /** The app's state before it read `deploying`, restored when the deployment ends. */
  previousState: AppState;
  commitSha: string | null;
  commitMessage: string | null;
  branch: string | null;
}

export interface CloneFlags {
  clone_variables: boolean;
  clone_secret_files: boolean;
  clone_scaling_settings: boolean;
  clone_health_checks: boolean;
  clone_security: boolean;
}

export function createAppActivities(
  deps: Pick<ActivityDeps, 'dataSource' | 'provider' | 'secretBox' | 'logger' | 'temporal' | 'config'>,
) {
  const { dataSource: ds, provider, secretBox, logger, config } = deps;
  const clones = parentImageSync(deps);
  const driver = provider.apps;

  async function spec(appUuid: string): Promise<AppSpec> {
    const row = await one<{
      name: string;
      resource_uuid: string;
      internal_port: number;
      quota: { cpu_size: number; ram_size: number; disk_size: number; replicas: number };
    }>(ds, `SELECT name, resource_uuid, internal_port, quota FROM apps WHERE uuid = $1`, [appUuid]);
    if (!row) throw ApplicationFailure.nonRetryable(`app ${appUuid} does not exist`, 'AppGone');
    return {
      appUuid,
      name: row.name,
      resourceUuid: row.resource_uuid,
      internalPort: row.internal_port,
      cpuSize: row.quota.cpu_size,
      ramSize: row.quota.ram_size,
      diskSize: row.quota.disk_size,
      replicas: row.quota.replicas ?? 1,
    };
  }

  /** Removes an app's row and releases its capacity, only while it reads `state` (idempotent). */
  function removeAppIn(appUuid: string, state: 'cloning' | 'deleting'): Promise<boolean> {
    return ds.transaction(async (m) => {
      const app = await one(m, `SELECT 1 FROM apps WHERE uuid = $1 AND state = $2 FOR UPDATE`, [appUuid, state]);
      if (!app) return false;
      await m.query(`DELETE FROM resource_allocations WHERE owner_uuid = $1`, [appUuid]);
      await m.query(`DELETE FROM apps WHERE uuid = $1`, [appUuid]);
      return true;
    });
  }

  return {
    /** The app as its workflows see it; null once it is gone. */
    async appInfo(appUuid: string): Promise<AppInfo | null> {
      const row = await one<{
        workspace_uuid: string;
        state: AppState;
        plan: { plan_type?: string };
        resource_name: string;
        labels: string[];
        deployment_method: string;
      }>(
        ds,
        `SELECT a.workspace_uuid, a.state, c.plan, c.name AS resource_name, c.labels, a.deployment_method
           FROM apps a JOIN compute_resources c ON c.uuid = a.resource_uuid WHERE a.uuid = $1`,
        [appUuid],
      );
      if (!row) return null;
      return {
        appUuid,
        workspaceUuid: row.workspace_uuid,
        state: row.state,
        planType: row.plan.plan_type ?? '',
        resourceName: row.resource_name,
        labels: row.labels,
        deploymentMethod: row.deployment_method,
        idleMs: config.appIdleTimeoutS * 1000,
      };
    },

    /**
     * The first deployment of a new public_git / github app: its branch head (resolved by the
     * deployment's workflow), pending, recorded as the platform's (the app's creation is the
     * caller's entry). Only for an app without deployments; a retry finds the one it made.
     * Answers its uuid, or null when the app already has deployments (or is gone).
     */
    async createInitialDeployment(appUuid: string): Promise<string | null> {
      // Its uuid is a function of the app's: a retry finds the deployment it made, never a second one.
      const h = createHash('sha256').update(`initial-deployment:${appUuid}`).digest('hex');
      const uuid = `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
      return ds.transaction(async (m) => {
        const app = await one<{ workspace_uuid: string; deployment_method: string; branch: string | null }>(
          m,
          `SELECT workspace_uuid, deployment_method, deployment_config->>'branch' AS branch FROM apps WHERE uuid = $1 FOR UPDATE`,
          [appUuid],
        );
        if (!app || !deploysBranchHeadAtCreation(app.deployment_method)) return null;
        const earlier = await rows<{ uuid: string; state: string }>(
          m,
          `SELECT uuid, state FROM app_deployments WHERE app_uuid = $1`,
          [appUuid],
        );
        if (earlier.length > 0)
          return earlier.length === 1 && earlier[0]!.uuid === uuid && earlier[0]!.state === 'pending' ? uuid : null;
        const [row] = await rows<{ s: Record<string, unknown> }>(
          m,
          `INSERT INTO app_deployments (uuid, app_uuid, workspace_uuid, deployment_method, branch) VALUES ($1, $2, $3, $4, $5) RETURNING to_jsonb(app_deployments) AS s`,
          [uuid, appUuid, app.workspace_uuid, app.deployment_method, app.branch ?? 'main'],
        );
        await insertAuditEvent(m, {
          workspaceUuid: app.workspace_uuid,
          actorType: 'system',
          actorUuid: null,
          source: 'workflow',
          action: 'deployment.create',
          resourceType: 'deployment',
          resourceUuid: uuid,
          appUuid,
          diff: diffRecords(null, row!.s),
        });
        return uuid;
      });
    },

    /** Guarded move of an app's state; answers the state it reads afterwards (null if gone). */
    async moveApp(
      appUuid: string,
      from: readonly AppState[],
      to: AppState,
    ): Promise<{ moved: boolean; state: AppState | null }> {
      if (await moveState(ds, { table: 'apps', uuid: appUuid, from, to })) return { moved: true, state: to };
      const row = await one<{ state: AppState }>(ds, `SELECT state FROM apps WHERE uuid = $1`, [appUuid]);
      return { moved: false, state: row?.state ?? null };
    },

    /**
     * Provisions the workload, then plugs it into the VPCs it is recorded attached to (an
     * app that joined one at creation starts inside it, with no restart). Both driver calls
     * are idempotent, so a retry provisions and plugs nothing twice; a failed attach fails
     * the provisioning like any other driver fault.
     */
    async provisionApp(appUuid: string): Promise<void> {
      await driver.provision(await spec(appUuid));
      await plugInAppNetworks(ds, provider.network, appUuid);
    },
    // the run spec (its environment) is opened here, for the driver call only (never in workflow history)
    async startApp(appUuid: string): Promise<void> {
      await driver.start(appUuid, await appRunSpec(ds, secretBox, appUuid));
    },
    async stopApp(appUuid: string): Promise<void> {
      await driver.stop(appUuid);
    },
    async restartApp(appUuid: string): Promise<void> {
      await driver.restart(appUuid, await appRunSpec(ds, secretBox, appUuid));
    },
    async scaleAppToZero(appUuid: string): Promise<void> {
      await driver.scaleToZero(appUuid);
    },
    async appRuntimeStatus(appUuid: string): Promise<AppRuntimeStatus> {
      return driver.status(appUuid);
    },
    /** Sends the app's ports, as the database holds them, to the data plane. */
    async syncAppPorts(appUuid: string): Promise<void> {
      const ports = await rows<{ internal_port: number; protocol: string; external_port: number | null }>(
        ds,
        `SELECT internal_port, protocol, external_port FROM app_ports WHERE app_uuid = $1 ORDER BY id`,
        [appUuid],
      );
      await driver.applyPorts(
        appUuid,
        ports.map((p) => ({ internalPort: p.internal_port, protocol: p.protocol, externalPort: p.external_port })),
      );
    },

    // --- deployments ---

    /**
     * pending -> running, and the app reads `deploying`. Null when the deployment is no
     * longer pending (cancelled before it began) or the app cannot deploy now.
     */
    async beginDeployment(deploymentUuid: string): Promise<DeploymentStart | null> {
      return ds.transaction(async (m) => {
        const d = await one<{
          app_uuid: string;
          workspace_uuid: string;
          deployment_method: string;
          commit_sha: string | null;
          commit_message: string | null;
          branch: string | null;
        }>(
          m,
          `UPDATE app_deployments SET state = 'running', updated_at = now() WHERE uuid = $1 AND state = 'pending'
           RETURNING app_uuid, workspace_uuid, deployment_method, commit_sha, commit_message, branch`,
          [deploymentUuid],
        );
        if (!d) return null;
        const app = await one<{ state: AppState }>(m, `SELECT state FROM apps WHERE uuid = $1 FOR UPDATE`, [
          d.app_uuid,
        ]);
        const previous = app?.state ?? 'running';
        await moveAppTo(m, d.app_uuid, 'deploying');
        return {
          appUuid: d.app_uuid,
          workspaceUuid: d.workspace_uuid,
          method: d.deployment_method,
          previousState: previous === 'deploying' ? 'running' : previous,
          commitSha: d.commit_sha,
          commitMessage: d.commit_message,
          branch: d.branch,
        };
      });
    },

    /**
     * Fixes what is deployed: for git methods the commit (the branch head, resolved with
     * `git ls-remote`, unless one was asked for) and its message; for container_registry
     * the configured image; for parent_image the parent's current image. Returns a failure
     * reason instead of throwing when the source cannot be resolved.
     */
    async resolveDeploymentSource(
      deploymentUuid: string,
    ): Promise<
      | { ok: true; commitSha: string | null; commitMessage: string | null; branch: string | null }
      | { ok: false; reason: string }
    > {
      const d = await one<{
        app_uuid: string;
        deployment_method: string;
        commit_sha: string | null;
        commit_message: string | null;
        branch: string | null;
        config: Record<string, any>;
        parent_app_uuid: string | null;
      }>(
        ds,
        `SELECT d.app_uuid, d.deployment_method, d.commit_sha, d.commit_message, d.branch, a.deployment_config AS config, a.parent_app_uuid
           FROM app_deployments d JOIN apps a ON a.uuid = d.app_uuid WHERE d.uuid = $1`,
        [deploymentUuid],
      );
      if (!d) return { ok: false, reason: 'the deployment no longer exists' };
      if (isGitMethod(d.deployment_method)) {
        const repository: string | undefined = d.config.repository;
        const branch = d.branch ?? d.config.branch ?? 'main';
        let sha = d.commit_sha;
        let message = d.commit_message;
        if (repository) {
          try {
            const head = await branchHead(repository, branch);
            if (!head && !sha) return { ok: false, reason: `branch ${branch} does not exist in ${repository}` };
            sha ??= head;
            const fetched = await commitSubject(repository, sha === head ? `refs/heads/${branch}` : sha!);
            if (fetched && fetched.sha === sha) message = fetched.subject;
          } catch (err) {
            if (!(err instanceof GitError)) throw err;
            if (!sha) return { ok: false, reason: err.message };
            logger.warn(
              { deploymentUuid, err: err.message },
              'repository not reachable; deploying the commit as given',
            );
          }
        }
        if (!sha)
          return {
            ok: false,
            reason: 'no commit to deploy: give commit_sha (the repository is not reachable from the platform)',
          };
        await ds.query(
          `UPDATE app_deployments SET commit_sha = $2, commit_message = $3, branch = $4, updated_at = now() WHERE uuid = $1`,
          [deploymentUuid, sha, message, branch],
        );
        return { ok: true, commitSha: sha, commitMessage: message, branch };
      }
      let image: string | null = null;
      if (d.deployment_method === 'container_registry') image = d.config.image ?? null;
      if (d.deployment_method === 'parent_image') {
        if (!d.parent_app_uuid) return { ok: false, reason: 'the app has no parent app to take its image from' };
        image = await driver.currentImage(d.parent_app_uuid);
        if (!image) return { ok: false, reason: 'the parent app has no deployed image yet' };
      }
      await ds.query(
        `UPDATE app_deployments SET image = COALESCE($2, image), commit_sha = NULL, commit_message = NULL, branch = NULL, updated_at = now() WHERE uuid = $1`,
        [deploymentUuid, image],
      );
      return { ok: true, commitSha: null, commitMessage: null, branch: null };
    },

    /** Starts the build; a container_registry login (or a Dockerfile build's registry logins) is opened here, for this call only. */
    async startDeploymentBuild(deploymentUuid: string): Promise<void> {
      const d = await one<{
        app_uuid: string;
        deployment_method: string;
        commit_sha: string | null;
        image: string | null;
        credential_id: string | null;
        workspace_uuid: string;
        name: string;
        builder: string;
        repository: string | null;
      }>(
        ds,
        `SELECT d.app_uuid, d.deployment_method, d.commit_sha, d.image, a.deployment_config->>'credential_id' AS credential_id, a.workspace_uuid,
                a.name, a.builder, a.deployment_config->>'repository' AS repository
           FROM app_deployments d JOIN apps a ON a.uuid = d.app_uuid WHERE d.uuid = $1`,
        [deploymentUuid],
      );
      if (!d) throw ApplicationFailure.nonRetryable('the deployment no longer exists', 'DeploymentGone');
      let registryAuth = null;
      if (d.deployment_method === 'container_registry' && d.credential_id) {
        const c = await openRegistryCredential(deps, d.workspace_uuid, d.credential_id);
        if (!c)
          throw ApplicationFailure.nonRetryable(
            'the registry credential of the app no longer exists',
            'CredentialGone',
          );
        registryAuth = { server: c.server, username: c.username, token: c.token };
      }
      // a Dockerfile's FROM may name a private image: the build gets the workspace's logins and uses those its FROM lines need
      const registryLogins =
        d.builder === 'dockerfile' && isGitMethod(d.deployment_method)
          ? await openWorkspaceRegistryLogins(deps, d.workspace_uuid)
          : null;
      // git_push: the data plane's own repository of the app; public_git and github: the configured one
      const repository =
        d.deployment_method === 'git_push'
          ? driver.pushRepository(d.name)
          : isGitMethod(d.deployment_method)
            ? d.repository
            : null;
      await driver.startBuild({
        appUuid: d.app_uuid,
        deploymentUuid,
        method: d.deployment_method,
        builder: d.builder,
        commitSha: d.commit_sha,
        image: d.image,
        registryAuth,
        repository,
        credential: null,
        registryLogins,
      });
    },

    /** The build's progress, and whether a cancel was asked for (the database is the durable record of it). */
    async deploymentProgress(deploymentUuid: string): Promise<{ build: BuildStatus; cancelRequested: boolean }> {
      const row = await one<{ state: string }>(ds, `SELECT state FROM app_deployments WHERE uuid = $1`, [
        deploymentUuid,
      ]);
      return { build: await driver.buildStatus(deploymentUuid), cancelRequested: row?.state === 'cancelling' };
    },
    async isCancelRequested(deploymentUuid: string): Promise<boolean> {
      const row = await one<{ state: string }>(ds, `SELECT state FROM app_deployments WHERE uuid = $1`, [
        deploymentUuid,
      ]);
      return row?.state === 'cancelling';
    },
    async cancelDeploymentBuild(deploymentUuid: string): Promise<void> {
      await driver.cancelBuild(deploymentUuid);
    },
    /** Why the app's last rollout did not take over (null: it did); the previous release keeps serving when one did. */
    async rolloutFailure(appUuid: string): Promise<string | null> {
      return driver.rolloutFailure(appUuid);
    },
    async rolloutImage(appUuid: string, image: string): Promise<void> {
      await driver.rollout(appUuid, image, await appRunSpec(ds, secretBox, appUuid));
    },
    /** Ends a deployment once: completed, failed (with the reason) or cancelled; logs are stored then. */
    async finishDeployment(
      deploymentUuid: string,
      outcome: 'completed' | 'failed' | 'cancelled',
      message: string | null,
    ): Promise<boolean> {
      const { finished, synced } = await ds.transaction(async (m) => {
        const done = await rows<{ app_uuid: string }>(
          m,
          `UPDATE app_deployments SET state = $2, message = $3, finished_at = now(), logs_stored_at = now(), updated_at = now()
            WHERE uuid = $1 AND state IN ('pending', 'running', 'cancelling') RETURNING app_uuid`,
          [deploymentUuid, outcome, message],
        );
        if (done.length === 0 || outcome !== 'completed') return { finished: done.length > 0, synced: [] };
        // the deployment used the variables as they were when it began: a later change keeps the mark
        await m.query(
          `UPDATE apps a SET needs_redeploy_since = NULL FROM app_deployments d
                        WHERE d.uuid = $1 AND a.uuid = d.app_uuid AND a.needs_redeploy_since <= d.created_at`,
          [deploymentUuid],
        );
        return { finished: true, synced: await clones.queue(m, done[0]!.app_uuid) };
      });
      await clones.dispatch(synced);
      return finished;
    },

    // --- clone saga steps and their compensations ---

    /** Copies the settings the clone_* flags name from the source to the target. */
    async copyAppSettings(sourceUuid: string, targetUuid: string, flags: CloneFlags): Promise<void> {
      await ds.transaction(async (m) => {
        if (flags.clone_variables) {
          // the secret flag goes with the value: a secret variable stays secret in the copy
          await m.query(
            `INSERT INTO app_variables AS t (app_uuid, key, value_sealed, secret) SELECT $2, key, value_sealed, secret FROM app_variables WHERE app_uuid = $1
                          ON CONFLICT (app_uuid, key) DO UPDATE SET value_sealed = EXCLUDED.value_sealed, secret = t.secret OR EXCLUDED.secret`,
            [sourceUuid, targetUuid],
          );
        }
        if (flags.clone_secret_files) {
          await m.query(
            `INSERT INTO app_secret_files (uuid, app_uuid, name, content_sealed, size_bytes, sha256)
                         SELECT gen_random_uuid(), $2, name, content_sealed, size_bytes, sha256 FROM app_secret_files WHERE app_uuid = $1
                         ON CONFLICT (app_uuid, name) DO NOTHING`,
            [sourceUuid, targetUuid],
          );
        }
        const sets: string[] = [];
        if (flags.clone_scaling_settings) sets.push('scaling_profile = s.scaling_profile', 'quota = s.quota');
        if (flags.clone_health_checks) sets.push('health_checks = s.health_checks');
        if (flags.clone_security) {
          sets.push(
            'basic_auth_enabled = s.basic_auth_enabled',
            'basic_auth_username = s.basic_auth_username',
            'basic_auth_password_sealed = s.basic_auth_password_sealed',
            'private_access = s.private_access',
            'allow_connections = s.allow_connections',
          );
        }
        if (sets.length > 0) {
          await m.query(
            `UPDATE apps t SET ${sets.join(', ')}, updated_at = now() FROM apps s WHERE s.uuid = $1 AND t.uuid = $2 AND t.state = 'cloning'`,
            [sourceUuid, targetUuid],
          );
          if (flags.clone_scaling_settings) {
            await m.query(
              `UPDATE resource_allocations ra SET cpu_size = (a.quota->>'cpu_size')::float8, ram_size = (a.quota->>'ram_size')::bigint,
                             disk_size = (a.quota->>'disk_size')::bigint FROM apps a WHERE a.uuid = $1 AND ra.owner_uuid = a.uuid`,
              [targetUuid],
            );
          }
        }
      });
    },
    /** Compensation of copyAppSettings: the target's variables and secret files go. */
    async clearAppSettings(targetUuid: string): Promise<void> {
      await ds.query(`DELETE FROM app_variables WHERE app_uuid = $1`, [targetUuid]);
      await ds.query(`DELETE FROM app_secret_files WHERE app_uuid = $1`, [targetUuid]);
    },
    async cloneAppImage(sourceUuid: string, targetUuid: string, shared: boolean): Promise<void> {
      await whileHeartbeating('copying the release', driver.cloneImage(sourceUuid, targetUuid, { shared }));
    },
    async cloneAppVolume(sourceUuid: string, targetUuid: string): Promise<void> {
      await whileHeartbeating('copying the volume', driver.cloneVolume(sourceUuid, targetUuid));
    },
    async dropAppVolume(appUuid: string): Promise<void> {
      await driver.dropVolume(appUuid);
    },
    /** Removes the app's workload from the data plane (also a compensation). */
    async deleteAppWorkload(appUuid: string): Promise<void> {
      await driver.delete(appUuid);
    },
    /** Last compensation of a failed clone: the half-made app and everything it holds go. */
    async discardClone(targetUuid: string): Promise<boolean> {
      return removeAppIn(targetUuid, 'cloning');
    },

    // --- deletion ---

    /** Removes a deleting app's rows and releases its capacity and external ports. */
    async removeApp(appUuid: string): Promise<boolean> {
      return removeAppIn(appUuid, 'deleting');
    },
  };
}

export type { LiveStatus };
