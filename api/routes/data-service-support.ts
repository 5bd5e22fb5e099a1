import type { EntityManager } from 'typeorm';
import { one } from '../../entities/sql';
import { assertProjectVisible } from '../access';
import { write } from '../commands/audited-write';
import {
  changeDataServiceState,
  destroyDataService,
  restoreDataService,
  updateDataService,
} from '../commands/data-service-changes';
import { notFound } from '../problem';
import type { AnyRouteContext } from '../route';
import type { RestoreBody } from '../schemas/addons';
import { ADDON_COLUMNS, ADDON_FROM, addonView, type AddonRow, type AddonView } from '../views/addons';
import { findApp } from './app-support';

/** What the routes of add-ons (/apps/{uuid}/addons), services (/services) and cron jobs share: finding the row, and the actions they serve alike. */

type Ctx = AnyRouteContext;
type Db = Pick<EntityManager, 'query'>;

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

/** Sets public access (its own permission) and applies it to the cluster. */
export async function setPublicAccess(ctx: Ctx, row: AddonRow, on: boolean): Promise<AddonView> {
  await write(ctx, (tx) => updateDataService(tx, ctx.caller, row, { public_access: on }, 'public_access'));
  return viewOf(ctx, row.uuid);
}

/** Starts a restore (BKP-04..08) of a postgres add-on or service: a 409 while one is under way. */
export function startRestore(ctx: Ctx, row: AddonRow, b: RestoreBody): Promise<{ message: string }> {
  return write(ctx, (tx) => restoreDataService(tx, ctx.caller, row, b));
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
