import { WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy } from '@temporalio/client';
import type { EntityManager } from 'typeorm';
import { subPathProblem, type RestoreChoice } from '../domain/data';
import { typedStart } from '../platform/workflow-starts';
import { one } from '../entities/sql';
import { assertProjectVisible } from './access';
import { findApp } from './routes/app-support';
import { recordAudit } from './audit';
import { write } from './commands/audited-write';
import { changeDataServiceState, destroyDataService, updateDataService } from './commands/data-services';
import { conflict, notFound, unprocessable } from './problem';
import type { AnyRouteContext } from './route';
import type { RestoreBody } from './schemas/addons';
import { ADDON_COLUMNS, ADDON_FROM, addonView, type AddonRow, type AddonView } from './views/addons';
import { iso } from './views/common';
import { ADDON_LIVE_STATES, UNHEALTHY_STATES } from '../domain/addon-states';

/** Shared handler logic of add-ons (/apps/{uuid}/addons), services (/services) and cron jobs. */

type Ctx = AnyRouteContext;
type Db = Pick<EntityManager, 'query'>;

/** A ready add-on, service or cron job: live, or live but reported unhealthy (ADD-03, ADD-04). */
export const LIVE_STATES: string[] = [...ADDON_LIVE_STATES, ...UNHEALTHY_STATES];

export { findApp, type FoundApp as AppRow } from './routes/app-support';

/** The add-on (or cron job) of an `/apps/{uuid}/addons|cronjobs/{id}` route: the app is one the caller can see, the add-on one of that app. */
export async function appAddon(
  ctx: Ctx & { params: { uuid: string; id: string } },
  db: Db = ctx.deps.dataSource.manager,
  options: { cronjob?: boolean } = {},
): Promise<AddonRow> {
  await findApp(ctx, ctx.params.uuid, db);
  return findAddon(ctx, { appUuid: ctx.params.uuid, cronjob: options.cronjob }, ctx.params.id, db);
}

/** An add-on of the app (cron jobs only when `cronjob`), or a service of the workspace. */
export async function findAddon(
  ctx: Ctx,
  scope: { appUuid: string; cronjob?: boolean } | { service: true },
  id: string,
  db: Db = ctx.deps.dataSource.manager,
): Promise<AddonRow> {
  const row =
    'service' in scope
      ? await one<AddonRow>(
          db,
          `SELECT ${ADDON_COLUMNS} FROM ${ADDON_FROM} WHERE a.uuid = $1 AND a.workspace_uuid = $2 AND a.kind = 'service' AND a.state <> 'deleting'`,
          [id, ctx.caller.workspaceUuid],
        )
      : await one<AddonRow>(
          db,
          `SELECT ${ADDON_COLUMNS} FROM ${ADDON_FROM} WHERE a.uuid = $1 AND a.app_uuid = $2 AND a.state <> 'deleting'
        AND (a.type = 'cronjob') = $3`,
          [id, scope.appUuid, scope.cronjob ?? false],
        );
  const what = 'service' in scope ? 'service' : scope.cronjob ? 'cron job' : 'add-on';
  if (!row) throw notFound(what);
  if ('service' in scope) await assertProjectVisible(ctx, row.project_uuid, what);
  return row;
}

export async function viewOf(ctx: Ctx, uuid: string, db: Db = ctx.deps.dataSource.manager): Promise<AddonView> {
  const row = await one<AddonRow>(db, `SELECT ${ADDON_COLUMNS} FROM ${ADDON_FROM} WHERE a.uuid = $1`, [uuid]);
  return addonView(row!, ctx.deps.secretBox);
}

/** BKP-03 and the per-type rules of the settings; every refusal is a 422 naming the field. */
export function checkSettings(
  type: string,
  planType: string,
  body: { backup_enabled?: boolean; public_access?: boolean; s3_enabled?: boolean },
): void {
  if (body.backup_enabled === true && planType === 'free') {
    throw unprocessable('backups are not available on the free plan: backup_enabled is always false there', [
      { path: 'body.backup_enabled', message: 'must be false on the free plan' },
    ]);
  }
  if (body.backup_enabled === true && !['postgres', 'mysql'].includes(type)) {
    throw unprocessable(`backups exist for postgres and mysql only, not ${type}`, [
      { path: 'body.backup_enabled', message: `not available for ${type}` },
    ]);
  }
  if (body.public_access === true && type === 'storage') {
    throw unprocessable('a storage volume cannot be publicly accessible', [
      { path: 'body.public_access', message: 'not available for storage' },
    ]);
  }
  if (body.s3_enabled === true && !['postgres', 'mysql'].includes(type)) {
    throw unprocessable(`s3_enabled (backups to object storage) exists for postgres and mysql only, not ${type}`, [
      { path: 'body.s3_enabled', message: `not available for ${type}` },
    ]);
  }
}

/** ADD-09 / ADD-10: a relative sub_path without . or .. segments or backslashes, on shared (RWX) storage only. */
export function checkSubPath(
  type: string,
  subPath: string | undefined,
  accessMode: string | undefined,
  field = 'body.sub_path',
): void {
  if (subPath === undefined) return;
  if (type !== 'storage')
    throw unprocessable('sub_path is for storage add-ons only', [{ path: field, message: 'only for type storage' }]);
  const problem = subPathProblem(subPath);
  if (problem) throw unprocessable(`invalid sub_path: ${problem}`, [{ path: field, message: problem }]);
  if (accessMode === 'exclusive') {
    throw unprocessable('sub_path is accepted only for shared (RWX) access', [
      { path: 'body.access_mode', message: 'must be shared when sub_path is set' },
    ]);
  }
}

/** Sets public access (its own permission) and applies it to the cluster. */
export async function setPublicAccess(ctx: Ctx, row: AddonRow, on: boolean): Promise<AddonView> {
  await write(ctx, (tx) => updateDataService(tx, ctx.caller, row, { public_access: on }, 'public_access'));
  return viewOf(ctx, row.uuid);
}

/** The backups view (BKP-01/02): the setting, what runs, the recovery window and the backups (newest first). */
export async function backupsOf(ctx: Ctx, row: AddonRow) {
  const list: Array<{ name: string; taken_at: Date; size: string }> = await ctx.deps.dataSource.query(
    `SELECT name, taken_at, size FROM addon_backups WHERE addon_uuid = $1 ORDER BY taken_at DESC`,
    [row.uuid],
  );
  const earliest = list.length > 0 ? list[list.length - 1]!.taken_at : null;
  return {
    backup_enabled: row.plan_type === 'free' ? false : row.backup_enabled,
    backup_active: row.backup_active,
    recovery_window: earliest ? { earliest: iso(earliest)!, latest: new Date().toISOString() } : null,
    backups: list.map((b) => ({ name: b.name, created_at: iso(b.taken_at)!, size: Number(b.size) })),
  };
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Starts a restore (BKP-04..08) directly on Temporal with the id `<prefix>/<uuid>` and
 * the FAIL conflict policy: a second restore of the same database while one runs is a 409.
 */
export async function startRestore(
  ctx: Ctx,
  row: AddonRow,
  b: RestoreBody,
  prefix: 'addon-restore' | 'service-restore',
): Promise<{ message: string }> {
  if (row.type !== 'postgres')
    throw unprocessable(`restore is available for postgres only, not ${row.type}`, [
      { path: 'path.id', message: 'not a postgres database' },
    ]);
  if (row.replica_of)
    throw unprocessable('restore the primary, not a read replica', [{ path: 'path.id', message: 'is a read replica' }]);
  if (b.backup_name !== undefined && b.target_time !== undefined) {
    throw unprocessable('give backup_name or target_time, not both', [
      { path: 'body', message: 'backup_name and target_time are exclusive' },
    ]);
  }
  const backups = await backupsOf(ctx, row);
  if (backups.backups.length === 0)
    throw unprocessable('this database has no backup to restore', [{ path: 'body', message: 'no backups yet' }]);
  let from: RestoreChoice = { latest: true };
  if (b.backup_name !== undefined) {
    if (!backups.backups.some((x) => x.name === b.backup_name)) {
      throw unprocessable(`no backup named "${b.backup_name}"`, [
        { path: 'body.backup_name', message: 'no such backup' },
      ]);
    }
    from = { backupName: b.backup_name };
  } else if (b.target_time !== undefined) {
    const t = new Date(b.target_time);
    if (!ISO_8601.test(b.target_time) || Number.isNaN(t.getTime())) {
      throw unprocessable('target_time must be an ISO 8601 date-time with a time zone, e.g. 2026-11-22T03:00:00Z', [
        { path: 'body.target_time', message: 'not ISO 8601' },
      ]);
    }
    const w = backups.recovery_window!;
    if (t < new Date(w.earliest) || t > new Date()) {
      throw unprocessable(`target_time is outside the recovery window ${w.earliest} .. now`, [
        { path: 'body.target_time', message: 'outside the recovery window' },
      ]);
    }
    from = { targetTime: t.toISOString() };
  }
  if (!LIVE_STATES.includes(row.state)) throw conflict(`the database is ${row.state}; restore once it is running`);
  const toNew = b.to_new_cluster ?? false;
  try {
    const restore = typedStart('addonRestore', [{ addonUuid: row.uuid, from, toNewCluster: toNew }], {
      operation: prefix,
      workspaceUuid: ctx.caller.workspaceUuid,
      resourceUuid: row.uuid,
    });
    await ctx.deps.temporal.workflow.start(restore.workflowType, {
      ...restore.options,
      taskQueue: ctx.deps.config.taskQueue,
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError)
      throw conflict('a restore of this database is already running');
    throw err;
  }
  // The restore changes no row here (the workflow does): the entry records what was asked, once it started.
  await recordAudit(ctx.deps.dataSource.manager, ctx, {
    resourceUuid: row.uuid,
    before: null,
    after: {
      restore_from:
        'backupName' in from
          ? { backup_name: from.backupName }
          : 'targetTime' in from
            ? { target_time: from.targetTime }
            : 'latest',
      to_new_cluster: toNew,
    },
  });
  const what =
    'backupName' in from
      ? `backup ${from.backupName}`
      : 'targetTime' in from
        ? `the state at ${from.targetTime}`
        : 'the latest backup';
  return {
    message: toNew
      ? `Restoring ${what} into a new cluster beside ${row.name}; the current database is not touched.`
      : `Restoring ${what} in place: the current data of ${row.name} is replaced.`,
  };
}

/** Starts the destructive workflow (ADD-11) and says so. */
export async function destroy(ctx: Ctx, row: AddonRow, mode: 'reset' | 'delete'): Promise<{ message: string }> {
  await write(ctx, (tx) => destroyDataService(tx, ctx.caller, row, mode));
  return {
    message:
      mode === 'reset'
        ? `Resetting ${row.name}: every piece of its data and its backups is being dropped. This is destructive: the data does not come back.`
        : `Deleting ${row.name} and its data${row.type === 'postgres' ? ' and read replicas' : ''}. This is destructive: the data does not come back.`,
  };
}

/** Stops (data kept, state `stopped`) or starts (state `creating`, then the live status) an add-on or service. */
export function changeState(ctx: Ctx, row: AddonRow, action: 'start' | 'stop'): Promise<AddonView> {
  return write(ctx, async (tx) => {
    await changeDataServiceState(tx, ctx.caller, row, action);
    return viewOf(ctx, row.uuid, tx.m);
  });
}
