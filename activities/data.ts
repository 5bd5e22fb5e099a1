import type { Addon } from '../entities/addon';
import { randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { ScheduleAlreadyRunning, ScheduleNotFoundError } from '@temporalio/client';
import { typedStart, type WorkflowArgs, type WorkflowName } from '../platform/workflow-starts';
import { diffRecords } from '../domain/audit';
import { ADDON_LIVE_STATES, UNHEALTHY_STATES, type AddonState, type RestoreChoice } from '../domain/data';
import { insertAuditEvent } from '../entities/audit-events';
import { one, rows } from '../entities/sql';
import { attemptScopedUuid } from './attempt-id';
import type { ActivityDeps } from './deps';
import { moveState } from './state';
import type { ClusterSpec, ClusterStatus, DataEngine, RestoreSource } from '../platform/drivers/data';
import { appRunSpec } from './app-environment';
import { whileHeartbeating } from './heartbeat';

/** A row of `addons` as the activities read it (SELECT *), its state one of the add-on states. */
type AddonRow = Omit<Addon, 'state'> & { state: AddonState };

export const generatePassword = () => randomBytes(24).toString('base64url');
export const clusterIdOf = (uuid: string) => `c-${uuid}`;

/** Activities of data services: add-on and service provisioning, backups, restore, replicas, cron jobs. */
export function createDataActivities(
  deps: Pick<ActivityDeps, 'dataSource' | 'logger' | 'secretBox' | 'provider' | 'temporal' | 'config'>,
) {
  const { dataSource: ds, logger, secretBox, provider, temporal, config } = deps;
  const driver = () => provider.data;

  async function load(uuid: string): Promise<AddonRow | undefined> {
    return one<AddonRow>(ds, `SELECT * FROM addons WHERE uuid = $1`, [uuid]);
  }
  async function required(uuid: string): Promise<AddonRow> {
    const row = await load(uuid);
    if (!row) throw ApplicationFailure.nonRetryable(`add-on ${uuid} is gone`, 'AddonGone');
    return row;
  }
  /** The cluster spec, with the password opened here (never part of workflow data). */
  async function specOf(row: AddonRow): Promise<ClusterSpec> {
    const creds = row.replica_of ? await required(row.replica_of) : row;
    return {
      id: row.cluster_id ?? clusterIdOf(row.uuid),
      engine: row.type as DataEngine,
      cpuSize: Number(row.quota.cpu_size ?? 0.5),
      ramSize: Number(row.quota.ram_size ?? 512 * 2 ** 20),
      publicAccess: creds.public_access,
      backups: row.backup_enabled,
      password: creds.password_sealed ? secretBox.open(creds.password_sealed) : null,
      username: creds.username,
      database: creds.database_name,
    };
  }
  /** Records where the driver serves the add-on (connection_details read it); the simulated driver names none. */
  async function recordEndpoint(uuid: string, s: ClusterStatus): Promise<void> {
    if (!s.endpoint) return;
    await ds.query(`UPDATE addons SET endpoint = $2 WHERE uuid = $1 AND endpoint IS DISTINCT FROM $2::jsonb`, [
      uuid,
      JSON.stringify(s.endpoint),
    ]);
  }
  async function mirrorBackups(row: AddonRow): Promise<number> {
    const list = await driver().listBackups(row.cluster_id!);
    await ds.transaction(async (m) => {
      await m.query(`DELETE FROM addon_backups WHERE addon_uuid = $1 AND NOT (name = ANY($2::text[]))`, [
        row.uuid,
        list.map((b) => b.name),
      ]);
      for (const b of list) {
        await m.query(
          `INSERT INTO addon_backups (addon_uuid, name, taken_at, size) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
          [row.uuid, b.name, b.taken_at, b.size],
        );
      }
    });
    return list.length;
  }

  let healthScheduleEnsured = false;
  /**
   * The health sweep's Temporal Schedule (`addon-health/<task queue>`, every minute),
   * created once by the first provisioning on this task queue.
   */
  async function ensureHealthSchedule(): Promise<void> {
    if (healthScheduleEnsured) return;
    try {
      await temporal.schedule.create({
        scheduleId: `addon-health/${config.taskQueue}`,
        spec: { intervals: [{ every: '1m' }] },
        // One sweep per task queue, not an operation on a resource: its own id, no search attributes.
        action: {
          type: 'startWorkflow',
          workflowType: 'addonHealthSweep' satisfies WorkflowName,
          taskQueue: config.taskQueue,
          workflowId: `addon-health/${config.taskQueue}`,
          args: [] satisfies WorkflowArgs<'addonHealthSweep'>,
          workflowExecutionTimeout: '5 minutes',
        },
      });
    } catch (err) {
      if (!(err instanceof ScheduleAlreadyRunning)) {
        // Not fatal for provisioning: the next provisioning tries again.
        logger.warn({ err }, 'could not create the add-on health schedule');
        return;
      }
    }
    healthScheduleEnsured = true;
  }

  const activities = {
    /**
     * Reads the live status of every provisioned add-on and service from the driver and
     * records changes (healthy, bound, running, or an unhealthy value: ADD-03/04).
     */
    async sweepAddonHealth(): Promise<number> {
      const live = await rows<{ uuid: string; cluster_id: string; state: AddonState }>(
        ds,
        `SELECT uuid, cluster_id, state FROM addons WHERE type <> 'cronjob' AND cluster_id IS NOT NULL
            AND state = ANY($1::text[]) ORDER BY updated_at LIMIT 1000`,
        [[...ADDON_LIVE_STATES, ...UNHEALTHY_STATES]],
      );
      let changed = 0;
      for (const a of live) {
        const s = await driver()
          .status(a.cluster_id)
          .catch(() => null);
        if (s) await recordEndpoint(a.uuid, s);
        if (!s?.ready || s.status === a.state || s.status === 'stopped') continue;
        if (await moveState(ds, { table: 'addons', uuid: a.uuid, from: [a.state], to: s.status })) {
          changed += 1;
          logger.info({ addon: a.uuid, from: a.state, to: s.status }, 'add-on status changed');
        }
      }
      return changed;
    },

    /** Creates the cluster of an add-on or service (a replica streams from its primary). */
    async provisionAddonCluster(uuid: string): Promise<void> {
      await ensureHealthSchedule();
      const row = await required(uuid);
      const spec = await specOf(row);
      if (row.replica_of) {
        const primary = await required(row.replica_of);
        await whileHeartbeating(
          'creating the replica',
          driver().createReplica({ ...spec, backups: false, primaryId: primary.cluster_id! }),
        );
      } else {
        await whileHeartbeating('creating the cluster', driver().provision(spec));
      }
      logger.info({ addon: uuid, type: row.type, cluster: spec.id }, 'add-on cluster provisioned');
    },

    /**
     * Reads the live status from the driver; once ready, the add-on's state becomes it
     * (healthy, bound, running or an unhealthy value). Answers whether it is ready.
     */
    async refreshAddonStatus(uuid: string): Promise<{ ready: boolean; status: AddonState }> {
      const row = await required(uuid);
      const s = await driver().status(row.cluster_id!);
      await recordEndpoint(uuid, s);
      // `stopped` is only ever written by a stop request: a cluster still stopping (or not yet
      // started) while the add-on should run is not ready, and the state is left alone.
      if (s.status === 'stopped') return { ready: row.state === 'stopped', status: s.status };
      if (
        s.ready &&
        row.state !== s.status &&
        !['pending', 'processing', 'deleting', 'resetting', 'stopped'].includes(row.state)
      ) {
        await moveState(ds, { table: 'addons', uuid, from: [row.state], to: s.status });
      }
      return s;
    },

    /** Creates the storage add-on's sub_path directory if missing (ADD-08). */
    async ensureAddonSubPaths(uuid: string): Promise<string[]> {
      const row = await required(uuid);
      const paths = new Set<string>();
      if (typeof row.settings.sub_path === 'string') paths.add(row.settings.sub_path);
      const mounts = await rows<{ sub_path: string }>(
        ds,
        `SELECT sub_path FROM service_mounts WHERE service_uuid = $1 AND sub_path IS NOT NULL`,
        [uuid],
      );
      for (const m of mounts) paths.add(m.sub_path);
      for (const p of paths) await driver().ensureSubPath(row.cluster_id!, p);
      await ds.query(`UPDATE service_mounts SET state = 'mounted' WHERE service_uuid = $1 AND state = 'pending'`, [
        uuid,
      ]);
      return [...paths];
    },

    /**
     * Brings the cluster in line with the row's settings (public access, backups). Answers
     * true once backup_active equals backup_enabled; false when the setting changed while
     * applying (the workflow applies again).
     */
    async syncAddonSettings(uuid: string): Promise<boolean> {
      const row = await required(uuid);
      const primary = row.replica_of ? await required(row.replica_of) : row;
      await driver().setRunning(row.cluster_id!, row.state !== 'stopped');
      await driver().setPublicAccess(row.cluster_id!, primary.public_access);
      if (row.replica_of) return true;
      await driver().setBackups(row.cluster_id!, row.backup_enabled);
      await mirrorBackups(row);
      const done = await rows(
        ds,
        `UPDATE addons SET backup_active = $2, updated_at = now() WHERE uuid = $1 AND backup_enabled = $2 RETURNING uuid`,
        [uuid, row.backup_enabled],
      );
      logger.info({ addon: uuid, backups: row.backup_enabled, inLine: done.length > 0 }, 'add-on settings applied');
      return done.length > 0;
    },

    /** Takes a base backup now and lists it (the cluster also takes one when backups turn on). */
    async takeAddonBackup(uuid: string): Promise<string> {
      const row = await required(uuid);
      const b = await driver().backupNow(row.cluster_id!);
      await mirrorBackups(row);
      return b.name;
    },

    /**
     * For a restore to a new cluster: a new add-on (or service) beside the source, with
     * its own generated credentials, in state `creating`. Idempotent by `targetUuid`.
     */
    async createRestoreTarget(sourceUuid: string, targetUuid: string): Promise<void> {
      const src = await required(sourceUuid);
      const suffix = randomBytes(3).toString('hex');
      await ds.query(
        `INSERT INTO addons (uuid, workspace_uuid, kind, app_uuid, project_uuid, resource_uuid, type, name, label, state, quota, settings,
                             public_access, backup_enabled, database_name, username, password_sealed, restored_from, cluster_id)
         SELECT $2, workspace_uuid, kind, app_uuid, project_uuid, resource_uuid, type, name || '-restore-' || $3, label || ' (restored)', 'creating',
                quota, settings, public_access, false, database_name, username, $4, uuid, $5
           FROM addons WHERE uuid = $1
         ON CONFLICT (uuid) DO NOTHING`,
        [sourceUuid, targetUuid, suffix, secretBox.seal(generatePassword()), clusterIdOf(targetUuid)],
      );
      logger.info({ addon: sourceUuid, target: targetUuid, type: src.type }, 'restore target created');
    },

    /** Restores a backup (by name, to a time, or the latest) in place or into the target add-on's new cluster. */
    async restoreAddonCluster(input: { addonUuid: string; targetUuid: string; from: RestoreChoice }): Promise<string> {
      const src = await required(input.addonUuid);
      const target = input.targetUuid === input.addonUuid ? src : await required(input.targetUuid);
      const from: RestoreSource =
        'targetTime' in input.from ? { targetTime: new Date(input.from.targetTime) } : input.from;
      const { restored } = await driver().restore({
        sourceId: src.cluster_id!,
        targetId: target.cluster_id!,
        from,
        targetSpec: target.uuid === src.uuid ? undefined : await specOf(target),
      });
      logger.info({ addon: src.uuid, target: target.uuid, restored }, 'backup restored');
      return restored;
    },

    /** Destroys the data of an add-on (ADD-11): reset keeps the cluster, delete removes it and the row. */
    async destroyAddonData(input: { addonUuid: string; mode: 'reset' | 'delete' }): Promise<void> {
      const row = await load(input.addonUuid);
      if (!row) return;
      if (row.type !== 'cronjob' && row.cluster_id) {
        if (input.mode === 'reset') await driver().reset(row.cluster_id);
        else await driver().delete(row.cluster_id);
      }
      if (input.mode === 'reset') {
        await ds.query(`DELETE FROM addon_backups WHERE addon_uuid = $1`, [row.uuid]);
        await moveState(ds, { table: 'addons', uuid: row.uuid, from: ['resetting'], to: 'creating' });
      } else {
        await ds.query(`DELETE FROM addons WHERE uuid = $1 AND state = 'deleting'`, [row.uuid]);
      }
      logger.info({ addon: row.uuid, mode: input.mode }, 'add-on data destroyed');
    },

    /** Creates, updates or (for a job being deleted or gone) deletes the cron job's Temporal Schedule `cronjob/<uuid>`. */
    async syncCronSchedule(uuid: string): Promise<'created' | 'updated' | 'deleted'> {
      const row = await load(uuid);
      const handle = temporal.schedule.getHandle(`cronjob/${uuid}`);
      if (!row || row.state === 'deleting') {
        try {
          await handle.delete();
        } catch (err) {
          if (!(err instanceof ScheduleNotFoundError)) throw err;
        }
        await ds.query(`DELETE FROM addons WHERE uuid = $1 AND state = 'deleting'`, [uuid]);
        return 'deleted';
      }
      const s = row.settings as { schedule_type: string; cron?: string; interval?: number };
      const spec =
        s.schedule_type === 'cron'
          ? { cronExpressions: [s.cron!] }
          : { intervals: [{ every: `${s.interval ?? 60}m` as const }] };
      const run = typedStart('cronjobRun', [{ cronjobUuid: uuid }], {
        operation: 'cronjob-run',
        workspaceUuid: row.workspace_uuid,
        resourceUuid: uuid,
      });
      const action = {
        type: 'startWorkflow' as const,
        workflowType: run.workflowType,
        taskQueue: config.taskQueue,
        ...run.options,
      };
      let result: 'created' | 'updated';
      try {
        await temporal.schedule.create({
          scheduleId: `cronjob/${uuid}`,
          spec,
          action,
          memo: { app: row.app_uuid, label: row.label },
        });
        result = 'created';
      } catch (err) {
        if (!(err instanceof ScheduleAlreadyRunning)) throw err;
        await handle.update((prev) => ({ ...prev, spec, action }));
        result = 'updated';
      }
      await moveState(ds, { table: 'addons', uuid, from: ['pending', 'processing'], to: 'running' });
      return result;
    },

    /**
     * One run of a cron job: the driver runs the command in the app; its log is kept for the
     * log stream. The run's row and its audit entry (source scheduler) are written together,
     * once per scheduled run: a retry finds the run and, if it finished, returns its exit code.
     */
    async runCronJob(cronjobUuid: string): Promise<number | null> {
      const row = await load(cronjobUuid);
      if (!row || row.state === 'deleting') return null;
      // fixed for the workflow run that started it: a retried activity finds its run instead of starting a second
      const runId = attemptScopedUuid('cronjob-run', { perActivity: false });
      const finished = await ds.transaction(async (m) => {
        const started = await one(
          m,
          `INSERT INTO cronjob_runs (uuid, cronjob_uuid, started_at) VALUES ($1, $2, now()) ON CONFLICT (uuid) DO NOTHING RETURNING uuid`,
          [runId, cronjobUuid],
        );
        if (!started)
          return one<{ exit_code: number | null }>(
            m,
            `SELECT exit_code FROM cronjob_runs WHERE uuid = $1 AND finished_at IS NOT NULL`,
            [runId],
          );
        await insertAuditEvent(m, {
          workspaceUuid: row.workspace_uuid,
          actorType: 'system',
          actorUuid: null,
          source: 'scheduler',
          action: 'cronjob.run',
          resourceType: 'cronjob',
          resourceUuid: cronjobUuid,
          appUuid: row.app_uuid,
          diff: diffRecords(null, { run: runId }),
        });
        return undefined;
      });
      if (finished) return finished.exit_code;
      const result = await driver()
        .runJob({
          appUuid: row.app_uuid!,
          command: String(row.settings.command),
          run: await appRunSpec(ds, secretBox, row.app_uuid!),
        })
        .catch(async (err: Error) => {
          // the log stream says why the run did not happen (no exit code: nothing ran)
          await ds.query(`UPDATE cronjob_runs SET finished_at = now(), log = $2 WHERE uuid = $1`, [
            runId,
            `the run did not start: ${err.message}\n`,
          ]);
          throw err;
        });
      await ds.query(`UPDATE cronjob_runs SET finished_at = now(), exit_code = $2, log = $3 WHERE uuid = $1`, [
        runId,
        result.exitCode,
        result.log,
      ]);
      return result.exitCode;
    },

    /**
     * For the app deletion saga: deletes every add-on, replica and cron job of an app, with
     * their clusters (data does not come back) and schedules. Idempotent.
     */
    async deleteAppAddons(appUuid: string): Promise<number> {
      const found = await rows<{ uuid: string; type: string; cluster_id: string | null }>(
        ds,
        `UPDATE addons SET state = 'deleting', updated_at = now() WHERE app_uuid = $1 RETURNING uuid, type, cluster_id`,
        [appUuid],
      );
      for (const a of found) {
        if (a.type === 'cronjob') await activities.syncCronSchedule(a.uuid);
        else {
          if (a.cluster_id) await driver().delete(a.cluster_id);
          await ds.query(`DELETE FROM addons WHERE uuid = $1`, [a.uuid]);
        }
      }
      return found.length;
    },

    // --- for the apps clone saga (see docs/decisions.md, "Data services") ---

    /**
     * Copies an add-on onto another app as `targetUuid` (idempotent): new credentials, a
     * new cluster; with data, a fresh base backup of the source restored into it.
     */
    async cloneAddon(input: {
      sourceUuid: string;
      targetAppUuid: string;
      targetUuid: string;
      withData: boolean;
    }): Promise<void> {
      const src = await required(input.sourceUuid);
      const app = await one<{ workspace_uuid: string; project_uuid: string | null; resource_uuid: string }>(
        ds,
        `SELECT workspace_uuid, project_uuid, resource_uuid FROM apps WHERE uuid = $1`,
        [input.targetAppUuid],
      );
      if (!app) throw ApplicationFailure.nonRetryable(`app ${input.targetAppUuid} is gone`, 'AppGone');
      await ds.query(
        `INSERT INTO addons (uuid, workspace_uuid, kind, app_uuid, project_uuid, resource_uuid, type, name, label, state, quota, settings,
                             public_access, backup_enabled, database_name, username, password_sealed, cluster_id)
         SELECT $2, $3, 'addon', $4, $5, $6, type, $7, label, 'creating', quota, settings, public_access, backup_enabled, database_name,
                username, $8, $9 FROM addons WHERE uuid = $1
         ON CONFLICT (uuid) DO NOTHING`,
        [
          src.uuid,
          input.targetUuid,
          app.workspace_uuid,
          input.targetAppUuid,
          app.project_uuid,
          app.resource_uuid,
          `${src.type}-${randomBytes(4).toString('hex')}`,
          src.password_sealed ? secretBox.seal(generatePassword()) : null,
          clusterIdOf(input.targetUuid),
        ],
      );
      const target = await required(input.targetUuid);
      if (input.withData && src.type !== 'storage' && src.cluster_id) {
        const backup = await driver().backupNow(src.cluster_id);
        await mirrorBackups(src);
        await driver().restore({
          sourceId: src.cluster_id,
          targetId: target.cluster_id!,
          from: { backupName: backup.name },
          targetSpec: await specOf(target),
        });
      } else {
        await driver().provision(await specOf(target));
        if (input.withData && src.type === 'storage' && src.cluster_id)
          await driver().copyVolume(src.cluster_id, target.cluster_id!);
      }
    },
    /** Compensation of cloneAddon: removes the copy and its cluster. */
    async dropClonedAddon(targetUuid: string): Promise<void> {
      const row = await load(targetUuid);
      if (!row) return;
      if (row.cluster_id) await driver().delete(row.cluster_id);
      await ds.query(`DELETE FROM addons WHERE uuid = $1`, [targetUuid]);
    },
    /** Copies a cron job onto another app as `targetUuid` and creates its schedule (idempotent). */
    async cloneCronjob(input: { sourceUuid: string; targetAppUuid: string; targetUuid: string }): Promise<void> {
      await ds.query(
        `INSERT INTO addons (uuid, workspace_uuid, kind, app_uuid, project_uuid, resource_uuid, type, name, label, state, quota, settings)
         SELECT $2, a.workspace_uuid, 'addon', a.uuid, a.project_uuid, a.resource_uuid, 'cronjob', $3, c.label, 'pending', c.quota, c.settings
           FROM addons c, apps a WHERE c.uuid = $1 AND c.type = 'cronjob' AND a.uuid = $4
         ON CONFLICT (uuid) DO NOTHING`,
        [input.sourceUuid, input.targetUuid, `cronjob-${randomBytes(4).toString('hex')}`, input.targetAppUuid],
      );
      await activities.syncCronSchedule(input.targetUuid);
    },
    /** Compensation of cloneCronjob: deletes the copy and its schedule. */
    async dropClonedCronjob(targetUuid: string): Promise<void> {
      await ds.query(`UPDATE addons SET state = 'deleting' WHERE uuid = $1`, [targetUuid]);
      await activities.syncCronSchedule(targetUuid);
    },
  };
  return activities;
}
