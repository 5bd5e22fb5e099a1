import * as yup from 'yup';
import { createAddon } from '../commands/addons';
import { write } from '../commands/audited-write';
import { route } from '../route';
import { createReplica, updateDataService } from '../commands/data-service-changes';
import { backupsOf } from '../data-service-backups';
import { findApp } from './app-support';
import { appAddon, changeState, destroy, setPublicAccess, startRestore, viewOf } from './data-service-support';
import {
  addonCreateBody,
  addonUpdateBody,
  publicAccessBody,
  replicaBody,
  restoreBody,
  stateBody,
  type AddonCreateBody,
  type AddonUpdateBody,
  type RestoreBody,
} from '../schemas/addons';
import { addonSchema, backupsSchema, loadAppAddons, messageSchema } from '../views/addons';

const TAG = 'add-ons';
type AppParams = { uuid: string };
type AddonParams = { uuid: string; id: string };

export const addonRoutes = [
  route<AppParams>({
    method: 'get',
    path: '/apps/{uuid}/addons',
    requires: 'addons.read',
    tag: TAG,
    summary: 'List the add-ons attached to an app, newest first (cron jobs excluded)',
    response: yup.array(addonSchema),
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      return (await loadAppAddons(ctx.deps.dataSource.manager, ctx.deps.secretBox, [app.uuid])).get(app.uuid)!.addons;
    },
  }),
  route<AppParams, {}, AddonCreateBody>({
    method: 'post',
    path: '/apps/{uuid}/addons',
    requires: 'addons.write',
    tag: TAG,
    status: 201,
    body: addonCreateBody,
    audit: 'addon.create',
    summary:
      'Attach a postgres, mysql, valkey or storage add-on; provisioning runs pending -> processing -> creating -> live status',
    response: addonSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const addon = await createAddon(tx, ctx.caller, { ...ctx.body, appUuid: ctx.params.uuid });
        ctx.koa.set('Location', `/api/v1/apps/${addon.app_uuid}/addons/${addon.uuid}`);
        return viewOf(ctx, addon.uuid, tx.m);
      }),
  }),
  route<AddonParams>({
    method: 'get',
    path: '/apps/{uuid}/addons/{id}',
    requires: 'addons.read',
    tag: TAG,
    summary: 'Show an add-on with its connection details',
    response: addonSchema,
    async handler(ctx) {
      return viewOf(ctx, (await appAddon(ctx)).uuid);
    },
  }),
  route<AddonParams, {}, AddonUpdateBody>({
    method: 'put',
    path: '/apps/{uuid}/addons/{id}',
    requires: 'addons.write',
    tag: TAG,
    body: addonUpdateBody,
    audit: 'addon.update',
    summary:
      'Update an add-on (label, quota, backup_enabled, public_access, s3_enabled); settings are applied by a workflow',
    response: addonSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        await updateDataService(tx, ctx.caller, await appAddon(ctx, tx.m), ctx.body);
        return viewOf(ctx, ctx.params.id, tx.m);
      }),
  }),
  route<AddonParams, {}, { public_access: boolean }>({
    method: 'post',
    path: '/apps/{uuid}/addons/{id}/public_access',
    operationId: 'setAppAddonPublicAccess',
    requires: 'addons.public_access',
    tag: TAG,
    body: publicAccessBody,
    audit: 'addon.public_access',
    summary: 'Turn public access on or off (changes connection_details.external)',
    response: addonSchema,
    async handler(ctx) {
      return setPublicAccess(ctx, await appAddon(ctx), ctx.body.public_access);
    },
  }),
  route<AddonParams, {}, { action: 'start' | 'stop' }>({
    method: 'patch',
    path: '/apps/{uuid}/addons/{id}/state',
    operationId: 'changeAppAddonState',
    requires: 'addons.write',
    tag: TAG,
    body: stateBody,
    audit: 'addon.change_state',
    summary: 'Stop (state stopped, data kept) or start (creating, then the live status) an add-on',
    response: addonSchema,
    async handler(ctx) {
      return changeState(ctx, await appAddon(ctx), ctx.body.action);
    },
  }),
  route<AddonParams>({
    method: 'delete',
    path: '/apps/{uuid}/addons/{id}',
    requires: 'addons.delete',
    tag: TAG,
    status: 202,
    audit: 'addon.delete',
    summary: 'Delete an add-on and its data (destructive: the data does not come back)',
    response: messageSchema,
    async handler(ctx) {
      return destroy(ctx, await appAddon(ctx), 'delete');
    },
  }),
  route<AddonParams>({
    method: 'post',
    path: '/apps/{uuid}/addons/{id}/reset_database',
    requires: 'addons.reset_database',
    tag: TAG,
    status: 202,
    audit: 'addon.reset_database',
    summary: "Drop every piece of an add-on database's data (destructive: the data does not come back)",
    response: messageSchema,
    async handler(ctx) {
      return destroy(ctx, await appAddon(ctx), 'reset');
    },
  }),
  route<AddonParams>({
    method: 'get',
    path: '/apps/{uuid}/addons/{id}/backups',
    requires: 'addons.read',
    tag: TAG,
    summary:
      'Backups of an add-on: backup_enabled (the setting), backup_active (what runs), the recovery window and the backups',
    response: backupsSchema,
    async handler(ctx) {
      return backupsOf(ctx.deps.dataSource.manager, await appAddon(ctx));
    },
  }),
  route<AddonParams, {}, RestoreBody>({
    method: 'post',
    path: '/apps/{uuid}/addons/{id}/restore_backup',
    requires: 'addons.restore',
    tag: TAG,
    status: 202,
    body: restoreBody,
    audit: 'addon.restore',
    summary:
      'Restore a postgres backup: backup_name, or target_time (point in time), or neither for the latest; to_new_cluster keeps the old database',
    response: messageSchema,
    async handler(ctx) {
      return startRestore(ctx, await appAddon(ctx), ctx.body);
    },
  }),
  route<AddonParams, {}, { cpu_size: number; ram_size: number }>({
    method: 'post',
    path: '/apps/{uuid}/addons/{id}/create_replica',
    requires: 'addons.write',
    tag: TAG,
    status: 201,
    body: replicaBody,
    audit: 'addon.create_replica',
    summary: "Create a read replica of a postgres add-on (shares the primary's credentials and public access)",
    response: addonSchema,
    async handler(ctx) {
      const primary = await appAddon(ctx);
      return write(ctx, async (tx) => viewOf(ctx, (await createReplica(tx, ctx.caller, primary, ctx.body)).uuid, tx.m));
    },
  }),
];
