import * as yup from 'yup';
import { canReachProject } from '../../domain/projects';
import { App } from '../../entities/app';
import {
  setHealthChecks,
  setScalingProfile,
  updateApp,
  updateAppDeployment,
  updateAppSecurity,
} from '../commands/app-settings';
import { changeAppState, deleteApp } from '../commands/app-state';
import { cloneApp, createApp } from '../commands/apps';
import { write, type Tx } from '../commands/audited-write';
import type { Caller } from '../context';
import { visibleProjectsClause } from '../access';
import { selectPage, type Page } from '../pagination';
import { notFound } from '../problem';
import { route, type RouteContext } from '../route';
import {
  cloneBody,
  createAppBody,
  deploymentSettingsBody,
  healthChecksBody,
  listAppsQuery,
  scalingProfileBody,
  securityBody,
  stateBody,
  updateAppBody,
} from '../schemas/apps';
import { int, json, obj } from '../schemas/common';
import {
  APP_SELECT,
  appSchema,
  appView,
  joinedRows,
  loadReachableApp,
  withAddons,
  type JoinedRow,
} from '../views/apps';
import { appResponse, findApp } from './app-support';

const TAG = 'apps';

const scalingSchema = obj({
  min_replicas: int().required(),
  max_replicas: int().required(),
  target_cpu_percent: int().nullable().defined(),
});

/** The handler of a change of the app at /apps/{uuid}: the command, then the App view, in its transaction. */
function changedApp<B>(command: (tx: Tx, caller: Caller, input: B & { uuid: string }) => Promise<App>) {
  return (ctx: RouteContext<{ uuid: string }, {}, B>) =>
    write(ctx, async (tx) => {
      const app = await command(tx, ctx.caller, { ...ctx.body, uuid: ctx.params.uuid });
      return appResponse(ctx, app.uuid, tx.m);
    });
}

export const appRoutes = [
  route<{}, {}, yup.InferType<typeof createAppBody>>({
    method: 'post',
    path: '/apps',
    requires: 'apps.create',
    tag: TAG,
    status: 201,
    audit: 'app.create',
    summary: 'Create an app: it is provisioned and started by its workflow (poll GET for the state)',
    body: createAppBody,
    response: appSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const app = await createApp(tx, ctx.caller, ctx.body);
        ctx.koa.set('Location', `/api/v1/apps/${app.uuid}`);
        return appResponse(ctx, app.uuid, tx.m);
      }),
  }),
  route<{}, Page & yup.InferType<typeof listAppsQuery>, unknown>({
    method: 'get',
    path: '/apps',
    requires: 'apps.list',
    tag: TAG,
    paginated: true,
    query: listAppsQuery,
    summary: 'List the apps of the workspace, newest first; filter by project_id and state',
    response: yup.array(appSchema),
    async handler(ctx) {
      const visible = await visibleProjectsClause(ctx, 'a.project_uuid', 2);
      const where = `a.workspace_uuid = $1 AND ${visible.sql} AND ($3::uuid IS NULL OR a.project_uuid = $3) AND ($4::text IS NULL OR a.state = $4)`;
      const params = [ctx.caller.workspaceUuid, visible.param, ctx.query.project_id ?? null, ctx.query.state ?? null];
      const found = joinedRows(
        await selectPage<JoinedRow>(ctx, {
          from: 'apps a',
          select: APP_SELECT,
          where,
          params,
          order: 'a.created_at DESC, a.uuid DESC',
        }),
      );
      return withAddons(
        ctx.deps.dataSource,
        ctx.deps.secretBox,
        found.map((r) => appView(r, ctx.deps.config)),
      );
    },
  }),
  route<{ uuid: string }>({
    method: 'get',
    path: '/apps/{uuid}',
    requires: 'apps.read',
    tag: TAG,
    summary: 'Show an app with its platform, region, add-ons and cron jobs',
    response: appSchema,
    async handler(ctx) {
      // one statement: the App, its project's restrictions (PRJ-04/05 checked on them) and its add-ons
      const found = await loadReachableApp(
        ctx.deps.dataSource,
        ctx.deps.secretBox,
        ctx.caller.workspaceUuid,
        ctx.params.uuid,
        ctx.deps.config,
        (restrictions) => canReachProject(ctx.caller, restrictions),
      );
      if (!found) throw notFound('app');
      return found;
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof updateAppBody>>({
    method: 'put',
    path: '/apps/{uuid}',
    requires: 'apps.update',
    tag: TAG,
    audit: 'app.update',
    summary:
      'Update an app (label, project, maintenance, DNS management, internal port, quota); fields left out keep their value',
    body: updateAppBody,
    response: appSchema,
    handler: changedApp(updateApp),
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof updateAppBody>>({
    method: 'patch',
    path: '/apps/{uuid}',
    requires: 'apps.update',
    tag: TAG,
    audit: 'app.update',
    summary: 'Update some fields of an app',
    body: updateAppBody,
    response: appSchema,
    handler: changedApp(updateApp),
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof securityBody>>({
    method: 'put',
    path: '/apps/{uuid}/security',
    requires: 'apps.update',
    tag: TAG,
    audit: 'app.update_security',
    summary:
      "Update an app's security: HTTP Basic Auth on the ingress (credentials never returned), private access, internal connections",
    body: securityBody,
    response: appSchema,
    handler: changedApp(updateAppSecurity),
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof deploymentSettingsBody>>({
    method: 'put',
    path: '/apps/{uuid}/deployment',
    requires: 'apps.update',
    tag: TAG,
    audit: 'app.update_deployment',
    summary: "Update an app's deployment settings (method, deployment_config, builder); the next deployment uses them",
    body: deploymentSettingsBody,
    response: appSchema,
    handler: changedApp(updateAppDeployment),
  }),
  route<{ uuid: string }>({
    method: 'get',
    path: '/apps/{uuid}/health_checks',
    requires: 'apps.read',
    tag: TAG,
    summary: "List an app's health checks",
    response: yup.array(json()),
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      const row = await ctx.deps.dataSource.manager.findOneOrFail(App, {
        where: { uuid: app.uuid },
        select: { uuid: true, health_checks: true },
      });
      return row.health_checks;
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof healthChecksBody>>({
    method: 'put',
    path: '/apps/{uuid}/health_checks',
    requires: 'apps.update',
    tag: TAG,
    audit: 'app.update_health_checks',
    summary: "Replace an app's health checks (at most one of each kind: liveness, readiness, startup)",
    body: healthChecksBody,
    response: yup.array(json()),
    handler: (ctx) => write(ctx, (tx) => setHealthChecks(tx, ctx.caller, { ...ctx.body, uuid: ctx.params.uuid })),
  }),
  route<{ uuid: string }>({
    method: 'get',
    path: '/apps/{uuid}/scaling_profile',
    requires: 'apps.read',
    tag: TAG,
    summary: "Show an app's scaling profile",
    response: scalingSchema,
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      const row = await ctx.deps.dataSource.manager.findOneOrFail(App, {
        where: { uuid: app.uuid },
        select: { uuid: true, scaling_profile: true },
      });
      return row.scaling_profile;
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof scalingProfileBody>>({
    method: 'put',
    path: '/apps/{uuid}/scaling_profile',
    requires: 'apps.update',
    tag: TAG,
    audit: 'app.update_scaling',
    summary: "Set an app's scaling profile (replica range and CPU target); the free plan runs one replica",
    body: scalingProfileBody,
    response: scalingSchema,
    handler: (ctx) => write(ctx, (tx) => setScalingProfile(tx, ctx.caller, { ...ctx.body, uuid: ctx.params.uuid })),
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof stateBody>>({
    method: 'patch',
    path: '/apps/{uuid}/state',
    operationId: 'changeAppState',
    requires: 'apps.change_state',
    tag: TAG,
    status: 202,
    audit: 'app.state_change',
    summary:
      'Start, stop or restart an app (action: start, stop, restart, schedule_start, schedule_stop); a sleeping app takes only the schedule_ actions',
    body: stateBody,
    response: appSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const app = await changeAppState(tx, ctx.caller, { uuid: ctx.params.uuid, action: ctx.body.action });
        return appResponse(ctx, app.uuid, tx.m);
      }),
  }),
  route<{ uuid: string }>({
    method: 'delete',
    path: '/apps/{uuid}',
    requires: 'apps.delete',
    tag: TAG,
    status: 202,
    audit: 'app.delete',
    summary:
      "Delete an app: its preview environments are destroyed first, then its workload, ports, variables, deployments and capacity are released (poll GET until 404); deleting a preview environment's app deletes the environment",
    response: appSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const app = await deleteApp(tx, ctx.caller, ctx.params.uuid);
        return appResponse(ctx, app.uuid, tx.m);
      }),
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof cloneBody>>({
    method: 'post',
    path: '/apps/{uuid}/clone',
    requires: 'apps.clone',
    tag: TAG,
    status: 201,
    audit: 'app.clone',
    summary:
      'Clone an app: the copy reads cloning while a saga copies it, then runs; a failed clone leaves nothing behind',
    body: cloneBody,
    response: appSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const app = await cloneApp(tx, ctx.caller, { ...ctx.body, sourceUuid: ctx.params.uuid });
        ctx.koa.set('Location', `/api/v1/apps/${app.uuid}`);
        return appResponse(ctx, app.uuid, tx.m);
      }),
  }),
];
