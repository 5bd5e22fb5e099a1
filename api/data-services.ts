import { randomBytes, randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy } from '@temporalio/client';
import type { EntityManager } from 'typeorm';
import { subPathProblem, type RestoreChoice } from '../domain/data';
import { typedStart } from '../platform/workflow-starts';
import { one, rows } from '../entities/sql';
import { assertProjectVisible } from './access';
import { recordAudit, snapshot } from './audit';
import { write, type Tx } from './commands/audited-write';
import { conflict, notFound, unprocessable } from './problem';
import type { AnyRouteContext } from './route';
import type { AddonUpdateBody, RestoreBody } from './schemas/addons';
import { markNeedsRedeploy } from './variables';
import { ADDON_COLUMNS, ADDON_FROM, addonView, type AddonRow, type AddonView } from './views/addons';
import { iso } from './views/common';

/** Shared handler logic of add-ons (/apps/{uuid}/addons), services (/services) and cron jobs. */

type Ctx = AnyRouteContext;
type Db = Pick<EntityManager, 'query'>;

export const LIVE_STATES = [
  'healthy',
  'bound',
  'running',
  'degraded',
  'degradated',
  'failing',
  'lost',
  'crashloopbackoff',
  'failed',
];

export { findApp, type FoundApp as AppRow } from './routes/app-support';

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
  if ('service' in scope) await assertProjectVisible(ctx, row.project_id, what);
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

/**
 * Applies an accepted update: backup_enabled changes now (BKP-01); a workflow brings
 * backup_active in line (BKP-02). Records the route's audit entry (also for a no-op).
 */
export async function updateData(ctx: Ctx, tx: Tx, row: AddonRow, b: AddonUpdateBody): Promise<void> {
  const m = tx.m;
  if (row.replica_of && (b.backup_enabled !== undefined || b.public_access !== undefined)) {
    throw unprocessable("a read replica follows its primary's backups and public access", [
      { path: 'body', message: 'change the primary instead' },
    ]);
  }
  checkSettings(row.type, row.plan_type, b);
  const settingsChange =
    (b.backup_enabled !== undefined && b.backup_enabled !== row.backup_enabled) ||
    (b.public_access !== undefined && b.public_access !== row.public_access);
  const settings = b.s3_enabled !== undefined ? { ...row.settings, s3_enabled: b.s3_enabled } : row.settings;
  const quota = b.quota ? { ...row.quota, ...b.quota } : row.quota;
  const before = await snapshot(m, 'addons', row.uuid);
  const updated = await one<{ settings_generation: number }>(
    m,
    `UPDATE addons SET label = COALESCE($2, label), quota = $3, settings = $4, public_access = COALESCE($5, public_access),
            backup_enabled = COALESCE($6, backup_enabled), settings_generation = settings_generation + $7::int,
            project_id = CASE WHEN $8::boolean THEN $9::uuid ELSE project_id END, updated_at = now()
      WHERE uuid = $1 RETURNING settings_generation`,
    [
      row.uuid,
      b.label ?? null,
      JSON.stringify(quota),
      JSON.stringify(settings),
      b.public_access ?? null,
      b.backup_enabled ?? null,
      settingsChange ? 1 : 0,
      b.project_id !== undefined,
      b.project_id ?? null,
    ],
  );
  await recordAudit(m, ctx, { resourceUuid: row.uuid, before, after: await snapshot(m, 'addons', row.uuid) });
  if (!settingsChange || !LIVE_STATES.includes(row.state)) return; // provisioning applies the settings itself
  await tx.enqueue({
    operation: row.kind === 'service' ? 'service-sync' : 'addon-sync',
    workflow: 'addonSync',
    workspaceUuid: ctx.caller.workspaceUuid,
    resourceUuid: row.uuid,
    subId: String(updated!.settings_generation),
    args: [{ addonUuid: row.uuid }],
  });
}

/** Sets public access (its own permission) and applies it to the cluster. */
export async function setPublicAccess(ctx: Ctx, row: AddonRow, on: boolean): Promise<AddonView> {
  await write(ctx, (tx) => updateData(ctx, tx, row, { public_access: on }));
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
export async function destroy(
  ctx: Ctx,
  row: AddonRow,
  mode: 'reset' | 'delete',
  what: 'add-on' | 'service',
): Promise<{ message: string }> {
  await write(ctx, async ({ m, enqueue }) => {
    const from =
      mode === 'reset' ? LIVE_STATES : [...LIVE_STATES, 'pending', 'processing', 'creating', 'stopped', 'restoring'];
    const before = await snapshot(m, 'addons', row.uuid);
    // rows(): TypeORM answers an UPDATE with [rows, count], whose length is never 0.
    const moved = await rows(
      m,
      `UPDATE addons SET state = $2, updated_at = now() WHERE uuid = $1 AND state = ANY($3::text[]) RETURNING uuid`,
      [row.uuid, mode === 'reset' ? 'resetting' : 'deleting', from],
    );
    if (moved.length === 0) throw conflict(`the ${what} is ${row.state}; try again once it is running`);
    if (mode === 'delete') {
      await m.query(`UPDATE addons SET state = 'deleting', updated_at = now() WHERE replica_of = $1`, [row.uuid]);
      // its connection variables leave the app's environment
      if (row.app_uuid && row.type !== 'cronjob' && !row.replica_of)
        await markNeedsRedeploy(m, { kind: 'app', uuid: row.app_uuid });
    }
    await recordAudit(m, ctx, { resourceUuid: row.uuid, before, after: await snapshot(m, 'addons', row.uuid) });
    await enqueue({
      operation: `${what === 'service' ? 'service' : 'addon'}-${mode}`,
      workflow: 'addonDestroy',
      workspaceUuid: ctx.caller.workspaceUuid,
      resourceUuid: row.uuid,
      args: [{ addonUuid: row.uuid, mode }],
    });
  });
  return {
    message:
      mode === 'reset'
        ? `Resetting ${row.name}: every piece of its data and its backups is being dropped. This is destructive: the data does not come back.`
        : `Deleting ${row.name} and its data${row.type === 'postgres' ? ' and read replicas' : ''}. This is destructive: the data does not come back.`,
  };
}

/** ADD-06/07: a read replica of a postgres add-on, with the primary's credentials and public access. */
export async function createReplica(
  ctx: Ctx,
  primary: AddonRow,
  b: { cpu_size: number; ram_size: number },
): Promise<AddonView> {
  if (primary.type !== 'postgres')
    throw unprocessable(`read replicas exist for postgres only, not ${primary.type}`, [
      { path: 'path.id', message: 'not postgres' },
    ]);
  if (primary.replica_of)
    throw unprocessable('a read replica cannot have replicas of its own', [
      { path: 'path.id', message: 'is a read replica' },
    ]);
  return write(ctx, async ({ m, enqueue }) => {
    const id = randomUUID();
    const name = `${primary.name.slice(0, 30)}-replica-${randomBytes(2).toString('hex')}`;
    await m.query(
      `INSERT INTO addons (uuid, workspace_uuid, kind, app_uuid, project_id, resource_uuid, type, name, label, state, quota, settings, replica_of, cluster_id)
       SELECT $2, workspace_uuid, kind, app_uuid, project_id, resource_uuid, 'postgres', $3, label || ' (replica)', 'pending', $4, '{}', uuid, $5
         FROM addons WHERE uuid = $1`,
      [
        primary.uuid,
        id,
        name,
        JSON.stringify({ ...primary.quota, cpu_size: b.cpu_size, ram_size: b.ram_size }),
        `c-${id}`,
      ],
    );
    await recordAudit(m, ctx, { resourceUuid: id, before: null, after: await snapshot(m, 'addons', id) });
    await enqueue({
      operation: 'addon-replica',
      workflow: 'addonProvision',
      workspaceUuid: ctx.caller.workspaceUuid,
      resourceUuid: id,
      args: [{ addonUuid: id }],
    });
    return viewOf(ctx, id, m);
  });
}

/** Stops (data kept, state `stopped`) or starts (state `creating`, then the live status) an add-on or service. */
export async function changeState(ctx: Ctx, row: AddonRow, action: 'start' | 'stop'): Promise<AddonView> {
  return write(ctx, async ({ m, enqueue }) => {
    const before = await snapshot(m, 'addons', row.uuid);
    const moved = await one<{ g: number }>(
      m,
      `UPDATE addons SET state = $2, settings_generation = settings_generation + 1, updated_at = now()
        WHERE uuid = $1 AND state = ANY($3::text[]) RETURNING settings_generation AS g`,
      [row.uuid, action === 'stop' ? 'stopped' : 'creating', action === 'stop' ? LIVE_STATES : ['stopped']],
    );
    if (!moved)
      throw conflict(
        action === 'stop'
          ? `cannot stop: the ${row.kind === 'service' ? 'service' : 'add-on'} is ${row.state}`
          : `cannot start: it is ${row.state}, not stopped`,
      );
    await recordAudit(m, ctx, { resourceUuid: row.uuid, before, after: await snapshot(m, 'addons', row.uuid) });
    await enqueue({
      operation: row.kind === 'service' ? 'service-sync' : 'addon-sync',
      workflow: 'addonSync',
      workspaceUuid: ctx.caller.workspaceUuid,
      resourceUuid: row.uuid,
      subId: String(moved.g),
      args: [{ addonUuid: row.uuid }],
    });
    return viewOf(ctx, row.uuid, m);
  });
}
