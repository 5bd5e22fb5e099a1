import { createHash, randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { APP_SIGNALS, appWorkflowId, type HealthEvent, type LiveStatus } from '../../../domain/apps';
import { one, rows } from '../../../entities/sql';
import type {
  AppRunSpec,
  AppRuntimeStatus,
  AppSpec,
  AppsDriver,
  BuildRequest,
  BuildStatus,
  PortSpec,
} from '../../../platform/drivers/apps';
import type { SimulatedCore } from './core';

/** Outcomes a test or an operator scripts for one app of the simulated data plane. */
export interface SimulatedAppScript {
  /** The next builds fail with this reason (deploy_ended data.message). */
  buildFailure?: string | null;
  /** Builds stay `building` until `releaseBuilds` (to cancel one mid-way). */
  buildHold?: boolean;
  /** The live status a start, restart or rollout ends in (default running). */
  startStatus?: LiveStatus | null;
}

/**
 * The SIMULATED apps driver: no cluster, only rows in sim_apps, sim_app_volumes and
 * sim_app_builds. Operations complete after the core's latency (BERTH_PROVIDER_LATENCY_MS)
 * and fail on injected or random faults (`SimulatedCore.injectFault(ds, 'apps.<op>')`).
 * Traffic and health reach app workflows through `SimulatedAppsControl` (below), which the
 * simulated ingress and its operator endpoints use.
 */
export class SimulatedAppsDriver implements AppsDriver {
  constructor(private readonly core: SimulatedCore) {}

  private get db() {
    return this.core.db;
  }

  private async require(appUuid: string): Promise<{ status: string; replicas: number }> {
    const row = await one<{ status: string; replicas: number }>(
      this.db,
      `SELECT status, replicas FROM sim_apps WHERE app_uuid = $1`,
      [appUuid],
    );
    if (!row)
      throw ApplicationFailure.nonRetryable(
        `simulated data plane: app ${appUuid} is not provisioned`,
        'SimulatedNotFound',
      );
    return row;
  }

  async provision(spec: AppSpec): Promise<void> {
    await this.core.maybeFail('apps.provision');
    const volume = randomUUID();
    const created = await rows(
      this.db,
      `INSERT INTO sim_apps (app_uuid, status, replicas, volume_uuid) VALUES ($1, 'provisioned', 0, $2)
       ON CONFLICT (app_uuid) DO NOTHING RETURNING app_uuid`,
      [spec.appUuid, volume],
    );
    if (created.length > 0) {
      await this.db.query(`INSERT INTO sim_app_volumes (uuid, app_uuid, size_bytes) VALUES ($1, $2, $3)`, [
        volume,
        spec.appUuid,
        spec.diskSize,
      ]);
    }
  }

  private async starting(appUuid: string): Promise<void> {
    await this.db.query(
      `UPDATE sim_apps SET status = 'starting', replicas = GREATEST(replicas, 1), ready_at = $2, updated_at = now() WHERE app_uuid = $1`,
      [appUuid, this.core.readyAt()],
    );
  }

  async start(appUuid: string): Promise<void> {
    await this.core.maybeFail('apps.start');
    const row = await this.require(appUuid);
    if (row.status === 'starting' || row.status === 'running' || row.status === 'problem') return;
    await this.starting(appUuid);
  }

  async stop(appUuid: string): Promise<void> {
    await this.core.maybeFail('apps.stop');
    await this.require(appUuid);
    await this.db.query(
      `UPDATE sim_apps SET status = 'stopped', replicas = 0, ready_at = NULL, updated_at = now() WHERE app_uuid = $1`,
      [appUuid],
    );
  }

  async restart(appUuid: string): Promise<void> {
    await this.core.maybeFail('apps.restart');
    await this.require(appUuid);
    await this.starting(appUuid);
  }

  async scaleToZero(appUuid: string): Promise<void> {
    await this.core.maybeFail('apps.scaleToZero');
    await this.require(appUuid);
    await this.db.query(
      `UPDATE sim_apps SET status = 'scaled_to_zero', replicas = 0, ready_at = NULL, updated_at = now() WHERE app_uuid = $1`,
      [appUuid],
    );
  }

  async status(appUuid: string): Promise<AppRuntimeStatus> {
    await this.core.maybeFail('apps.status');
    const row = await one<{ status: AppRuntimeStatus; due: boolean; start_status: LiveStatus | null }>(
      this.db,
      `SELECT a.status, a.ready_at <= now() AS due, s.start_status
         FROM sim_apps a LEFT JOIN sim_app_scripts s ON s.app_uuid = a.app_uuid WHERE a.app_uuid = $1`,
      [appUuid],
    );
    if (!row) return 'absent';
    if (row.status !== 'starting' || !row.due) return row.status;
    const live = row.start_status ?? 'running';
    await this.db.query(
      `UPDATE sim_apps SET status = $2, updated_at = now() WHERE app_uuid = $1 AND status = 'starting'`,
      [appUuid, live],
    );
    return live;
  }

  async startBuild(request: BuildRequest): Promise<void> {
    await this.core.maybeFail('apps.startBuild');
    await this.require(request.appUuid);
    const image =
      request.image ?? `registry.simulated.berth/${request.appUuid}:${request.commitSha ?? request.deploymentUuid}`;
    await this.db.query(
      `INSERT INTO sim_app_builds (deployment_uuid, app_uuid, status, image, ready_at) VALUES ($1, $2, 'building', $3, $4)
       ON CONFLICT (deployment_uuid) DO NOTHING`,
      [request.deploymentUuid, request.appUuid, image, this.core.readyAt()],
    );
  }

  async buildStatus(deploymentUuid: string): Promise<BuildStatus> {
    await this.core.maybeFail('apps.buildStatus');
    const b = await one<{
      status: string;
      image: string;
      reason: string | null;
      due: boolean;
      hold: boolean | null;
      failure: string | null;
    }>(
      this.db,
      `SELECT b.status, b.image, b.reason, b.ready_at <= now() AS due, s.build_hold AS hold, s.build_failure AS failure
         FROM sim_app_builds b LEFT JOIN sim_app_scripts s ON s.app_uuid = b.app_uuid WHERE b.deployment_uuid = $1`,
      [deploymentUuid],
    );
    if (!b)
      throw ApplicationFailure.nonRetryable(
        `simulated data plane: no build for deployment ${deploymentUuid}`,
        'SimulatedNotFound',
      );
    if (b.status === 'building') {
      if (b.hold || !b.due) return { status: 'building' };
      const [status, reason] = b.failure ? ['failed', b.failure] : ['succeeded', null];
      await this.db.query(
        `UPDATE sim_app_builds SET status = $2, reason = $3 WHERE deployment_uuid = $1 AND status = 'building'`,
        [deploymentUuid, status, reason],
      );
      return this.buildStatus(deploymentUuid);
    }
    if (b.status === 'failed') return { status: 'failed', reason: b.reason ?? 'build failed' };
    if (b.status === 'cancelled') return { status: 'cancelled' };
    return { status: 'succeeded', image: b.image };
  }

  async cancelBuild(deploymentUuid: string): Promise<void> {
    await this.core.maybeFail('apps.cancelBuild');
    await this.db.query(
      `UPDATE sim_app_builds SET status = 'cancelled' WHERE deployment_uuid = $1 AND status = 'building'`,
      [deploymentUuid],
    );
  }

  async rollout(appUuid: string, image: string, { env }: AppRunSpec): Promise<void> {
    await this.core.maybeFail('apps.rollout');
    await this.require(appUuid);
    // the simulator keeps the variable names and a digest of the values, never the values
    const keys = Object.keys(env).sort();
    const digest = createHash('sha256')
      .update(JSON.stringify(keys.map((k) => [k, env[k]])))
      .digest('hex');
    await this.db.query(
      `UPDATE sim_apps SET image = $2, status = 'starting', replicas = GREATEST(replicas, 1), ready_at = $3, env_keys = $4, env_digest = $5, updated_at = now() WHERE app_uuid = $1`,
      [appUuid, image, this.core.readyAt(), keys, digest],
    );
  }

  async currentImage(appUuid: string): Promise<string | null> {
    await this.core.maybeFail('apps.currentImage');
    const row = await one<{ image: string | null }>(this.db, `SELECT image FROM sim_apps WHERE app_uuid = $1`, [
      appUuid,
    ]);
    return row?.image ?? null;
  }

  async cloneImage(sourceAppUuid: string, targetAppUuid: string, options: { shared: boolean }): Promise<void> {
    await this.core.maybeFail('apps.cloneImage');
    await this.require(targetAppUuid);
    const source = await one<{ image: string | null }>(this.db, `SELECT image FROM sim_apps WHERE app_uuid = $1`, [
      sourceAppUuid,
    ]);
    const image = source?.image ? (options.shared ? source.image : `${source.image}#copy-for-${targetAppUuid}`) : null;
    await this.db.query(`UPDATE sim_apps SET image = $2, updated_at = now() WHERE app_uuid = $1`, [
      targetAppUuid,
      image,
    ]);
  }

  async cloneVolume(sourceAppUuid: string, targetAppUuid: string): Promise<void> {
    await this.core.maybeFail('apps.cloneVolume');
    await this.require(targetAppUuid);
    const source = await one<{ volume_uuid: string | null; size_bytes: string | null }>(
      this.db,
      `SELECT a.volume_uuid, v.size_bytes FROM sim_apps a LEFT JOIN sim_app_volumes v ON v.uuid = a.volume_uuid WHERE a.app_uuid = $1`,
      [sourceAppUuid],
    );
    if (!source?.volume_uuid) return;
    const done = await one(
      this.db,
      `SELECT 1 FROM sim_apps a JOIN sim_app_volumes v ON v.uuid = a.volume_uuid WHERE a.app_uuid = $1 AND v.source_volume_uuid = $2`,
      [targetAppUuid, source.volume_uuid],
    );
    if (done) return;
    const copy = randomUUID();
    await this.db.query(
      `INSERT INTO sim_app_volumes (uuid, app_uuid, source_volume_uuid, size_bytes) VALUES ($1, $2, $3, $4)`,
      [copy, targetAppUuid, source.volume_uuid, source.size_bytes ?? 0],
    );
    await this.db.query(`DELETE FROM sim_app_volumes WHERE app_uuid = $1 AND uuid <> $2`, [targetAppUuid, copy]);
    await this.db.query(`UPDATE sim_apps SET volume_uuid = $2, updated_at = now() WHERE app_uuid = $1`, [
      targetAppUuid,
      copy,
    ]);
  }

  async dropVolume(appUuid: string): Promise<void> {
    await this.core.maybeFail('apps.dropVolume');
    await this.db.query(`DELETE FROM sim_app_volumes WHERE app_uuid = $1`, [appUuid]);
    await this.db.query(`UPDATE sim_apps SET volume_uuid = NULL, updated_at = now() WHERE app_uuid = $1`, [appUuid]);
  }

  async applyPorts(appUuid: string, ports: PortSpec[]): Promise<void> {
    await this.core.maybeFail('apps.applyPorts');
    await this.require(appUuid);
    await this.db.query(`UPDATE sim_apps SET ports = $2, updated_at = now() WHERE app_uuid = $1`, [
      appUuid,
      JSON.stringify(ports),
    ]);
  }

  async delete(appUuid: string): Promise<void> {
    await this.core.maybeFail('apps.delete');
    await this.db.query(`DELETE FROM sim_app_builds WHERE app_uuid = $1`, [appUuid]);
    await this.db.query(`DELETE FROM sim_app_volumes WHERE app_uuid = $1`, [appUuid]);
    await this.db.query(`DELETE FROM sim_apps WHERE app_uuid = $1`, [appUuid]);
  }

  /** A simulated rollout never fails on its own: a scripted start status says failed instead. */
  async rolloutFailure(_appUuid: string): Promise<string | null> {
    return null;
  }

  pushRepository(_appName: string): string | null {
    return null;
  }
}

/**
 * The simulated data plane's side door, for tests and operators: it plays the part of the
 * cluster's ingress and health monitoring, signalling the app workflow (`app/<uuid>`) the
 * way a real driver's event watcher would.
 */
export class SimulatedAppsControl {
  constructor(
    private readonly ds: DataSource,
    private readonly temporal: Client,
  ) {}

  /** Scripts outcomes of the app's next builds and starts. */
  static async script(ds: DataSource, appUuid: string, script: SimulatedAppScript): Promise<void> {
    await ds.query(
      `INSERT INTO sim_app_scripts (app_uuid, build_failure, build_hold, start_status) VALUES ($1, $2, $3, $4)
       ON CONFLICT (app_uuid) DO UPDATE SET build_failure = EXCLUDED.build_failure, build_hold = EXCLUDED.build_hold,
         start_status = EXCLUDED.start_status`,
      [appUuid, script.buildFailure ?? null, script.buildHold ?? false, script.startStatus ?? null],
    );
  }

  private handle(appUuid: string) {
    return this.temporal.workflow.getHandle(appWorkflowId(appUuid));
  }

  /** A request reached the app (wakes a sleeping app; resets the idle timer of an awake one). */
  async traffic(appUuid: string): Promise<void> {
    await this.handle(appUuid).signal(APP_SIGNALS.traffic);
  }

  /** A health event of the orchestrator (app_unhealthy, app_crash_loop, app_stopped, app_blocked, scaling_limit_reached). */
  async health(appUuid: string, event: HealthEvent, detail?: string): Promise<void> {
    await this.handle(appUuid).signal(APP_SIGNALS.health, { event, detail: detail ?? null });
  }

  /** The orchestrator's live status changed (running, failed, problem). */
  async liveStatus(appUuid: string, status: LiveStatus): Promise<void> {
    await this.ds.query(
      `UPDATE sim_apps SET status = $2, updated_at = now() WHERE app_uuid = $1 AND status IN ('running', 'failed', 'problem', 'starting')`,
      [appUuid, status],
    );
    await this.handle(appUuid).signal(APP_SIGNALS.liveStatus, { status });
  }
}
