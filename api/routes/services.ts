import * as yup from 'yup';
import { assertProjectVisible, visibleProjectsClause } from '../access';
import { insertDataService } from '../commands/addons';
import { write } from '../commands/audited-write';
import { updateDataService } from '../commands/data-service-changes';
import { backupsOf } from '../data-service-backups';
import { checkSubPath } from '../data-service-rules';
import { findApp } from './app-support';
import { changeState, destroy, findAddon, setPublicAccess, startRestore, viewOf } from './data-service-support';
import { mountService } from '../commands/services';
import { selectPage, type Page } from '../pagination';
import { checkPlacement } from '../placement';
import { unprocessable } from '../problem';
import { route } from '../route';
import {
  mountBody,
  publicAccessBody,
  restoreBody,
  serviceCreateBody,
  serviceUpdateBody,
  stateBody,
  type AddonUpdateBody,
  type RestoreBody,
  type ServiceCreateBody,
} from '../schemas/addons';
import { obj, str, timestamp, uuid } from '../schemas/common';
import {
  ADDON_COLUMNS,
  ADDON_FROM,
  addonSchema,
  addonView,
  backupsSchema,
  messageSchema,
  type AddonRow,
} from '../views/addons';
import { isoRequired } from '../views/common';

const TAG = 'services';
type Params = { id: string };

const mountSchema = obj({
  uuid: uuid().required(),
  service_id: uuid().required(),
  app_uuid: uuid().required(),
  mount_path: str().required(),
  sub_path: str().nullable().defined(),
  access_mode: str().required(),
  state: str().required(),
  created_at: timestamp().required(),
});

export const serviceRoutes = [
  route<{}, Page>({
    method: 'get',
    path: '/services',
    requires: 'services.read',
    tag: TAG,
    paginated: true,
    summary: 'List standalone services (databases, caches, storage volumes), newest first',
    response: yup.array(addonSchema),
    async handler(ctx) {
      const visible = await visibleProjectsClause(ctx, 'a.project_uuid', 2);
      const where = `a.workspace_uuid = $1 AND a.kind = 'service' AND a.state <> 'deleting' AND ${visible.sql}`;
      const found = await selectPage<AddonRow>(ctx, {
        from: 'addons a',
        select: `SELECT ${ADDON_COLUMNS} FROM ${ADDON_FROM}`,
        where,
        params: [ctx.caller.workspaceUuid, visible.param],
        order: 'a.created_at DESC, a.uuid DESC',
      });
      return found.map((r) => addonView(r, ctx.deps.secretBox));
    },
  }),
  route<{}, {}, ServiceCreateBody>({
    method: 'post',
    path: '/services',
    requires: 'services.write',
    tag: TAG,
    status: 201,
    body: serviceCreateBody,
    audit: 'service.create',
    summary: 'Create a standalone service on a compute resource',
    response: addonSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        await checkPlacement(ctx, tx.m, { resourceId: ctx.body.resource_id, projectId: ctx.body.project_id });
        const service = await insertDataService(tx, ctx.caller, {
          kind: 'service',
          appUuid: null,
          projectId: ctx.body.project_id ?? null,
          resourceUuid: ctx.body.resource_id,
          body: ctx.body,
        });
        ctx.koa.set('Location', `/api/v1/services/${service.uuid}`);
        return viewOf(ctx, service.uuid, tx.m);
      }),
  }),
  route<Params>({
    method: 'get',
    path: '/services/{id}',
    requires: 'services.read',
    tag: TAG,
    summary: 'Show a service with its connection details',
    response: addonSchema,
    async handler(ctx) {
      return viewOf(ctx, (await findAddon(ctx, { service: true }, ctx.params.id)).uuid);
    },
  }),
  route<Params, {}, AddonUpdateBody>({
    method: 'put',
    path: '/services/{id}',
    requires: 'services.write',
    tag: TAG,
    body: serviceUpdateBody,
    audit: 'service.update',
    summary: 'Update a service (label, quota, project, backup_enabled, public_access, s3_enabled)',
    response: addonSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const row = await findAddon(ctx, { service: true }, ctx.params.id, tx.m);
        if (ctx.body.project_id !== undefined)
          await checkPlacement(ctx, tx.m, { resourceId: row.resource_uuid, projectId: ctx.body.project_id });
        await updateDataService(tx, ctx.caller, row, ctx.body);
        return viewOf(ctx, ctx.params.id, tx.m);
      }),
  }),
  route<Params>({
    method: 'delete',
    path: '/services/{id}',
    requires: 'services.write',
    tag: TAG,
    status: 202,
    audit: 'service.delete',
    summary: 'Delete a service and its data (destructive: the data does not come back)',
    response: messageSchema,
    async handler(ctx) {
      return destroy(ctx, await findAddon(ctx, { service: true }, ctx.params.id), 'delete');
    },
  }),
  route<Params, {}, { public_access: boolean }>({
    method: 'post',
    path: '/services/{id}/public_access',
    operationId: 'setServicePublicAccess',
    requires: 'services.public_access',
    tag: TAG,
    body: publicAccessBody,
    audit: 'service.public_access',
    summary: "Turn a service's public access on or off",
    response: addonSchema,
    async handler(ctx) {
      return setPublicAccess(ctx, await findAddon(ctx, { service: true }, ctx.params.id), ctx.body.public_access);
    },
  }),
  route<Params, {}, { action: 'start' | 'stop' }>({
    method: 'patch',
    path: '/services/{id}/state',
    operationId: 'changeServiceState',
    requires: 'services.operate',
    tag: TAG,
    body: stateBody,
    audit: 'service.change_state',
    summary: 'Stop (state stopped, data kept) or start a service',
    response: addonSchema,
    async handler(ctx) {
      return changeState(ctx, await findAddon(ctx, { service: true }, ctx.params.id), ctx.body.action);
    },
  }),
  route<Params>({
    method: 'post',
    path: '/services/{id}/reset_database',
    requires: 'services.reset_database',
    tag: TAG,
    status: 202,
    audit: 'service.reset_database',
    summary: "Drop every piece of a service database's data (destructive: the data does not come back)",
    response: messageSchema,
    async handler(ctx) {
      return destroy(ctx, await findAddon(ctx, { service: true }, ctx.params.id), 'reset');
    },
  }),
  route<Params>({
    method: 'get',
    path: '/services/{id}/backups',
    requires: 'services.read',
    tag: TAG,
    summary: 'Backups of a service: backup_enabled, backup_active, the recovery window and the backups',
    response: backupsSchema,
    async handler(ctx) {
      return backupsOf(ctx.deps.dataSource.manager, await findAddon(ctx, { service: true }, ctx.params.id));
    },
  }),
  route<Params, {}, RestoreBody>({
    method: 'post',
    path: '/services/{id}/restore_backup',
    requires: 'services.operate',
    tag: TAG,
    status: 202,
    body: restoreBody,
    audit: 'service.restore',
    summary:
      'Restore a postgres service backup: backup_name, target_time, or neither for the latest; to_new_cluster keeps the old database',
    response: messageSchema,
    async handler(ctx) {
      return startRestore(ctx, await findAddon(ctx, { service: true }, ctx.params.id), ctx.body);
    },
  }),
  route<Params, {}, { app_uuid: string; mount_path: string; sub_path?: string; access_mode?: 'shared' | 'exclusive' }>({
    method: 'post',
    path: '/services/{id}/mount_app',
    requires: 'services.operate',
    tag: TAG,
    status: 201,
    body: mountBody,
    audit: 'service.mount_app',
    summary:
      'Mount a storage service into an app, optionally a sub_path of it (created if missing; shared access only)',
    response: mountSchema,
    async handler(ctx) {
      const service = await findAddon(ctx, { service: true }, ctx.params.id);
      if (service.type !== 'storage')
        throw unprocessable('only storage services can be mounted', [
          { path: 'path.id', message: 'not a storage service' },
        ]);
      checkSubPath(
        'storage',
        ctx.body.sub_path,
        ctx.body.access_mode ?? String(service.settings.access_mode ?? 'shared'),
      );
      if (ctx.body.sub_path !== undefined && service.settings.access_mode === 'exclusive') {
        throw unprocessable('sub_path is accepted only for shared (RWX) access', [
          { path: 'body.sub_path', message: 'the volume is exclusive (RWO)' },
        ]);
      }
      const app = await findApp(ctx, ctx.body.app_uuid).catch(() => {
        throw unprocessable('app_uuid is not an app of this workspace', [
          { path: 'body.app_uuid', message: 'not found' },
        ]);
      });
      await assertProjectVisible(ctx, app.project_uuid, 'app');
      const row = await write(ctx, (tx) =>
        mountService(tx, ctx.caller, {
          serviceUuid: service.uuid,
          appUuid: app.uuid,
          mountPath: ctx.body.mount_path,
          subPath: ctx.body.sub_path ?? null,
        }),
      );
      return {
        uuid: row.uuid,
        service_id: service.uuid,
        app_uuid: app.uuid,
        mount_path: row.mount_path,
        sub_path: row.sub_path,
        access_mode: 'shared',
        state: row.state,
        created_at: isoRequired(row.created_at),
      };
    },
  }),
];
