import { randomUUID } from 'node:crypto';
import * as yup from 'yup';
import { stateMove, type StateAction } from '../../domain/apps';
import { canReachProject } from '../../domain/projects';
import type { HealthCheck, ScalingProfile } from '../../entities/app';
import { one } from '../../entities/sql';
import { cloneApp, createApp } from '../commands/apps';
import { write, type Tx } from '../commands/audited-write';
import { visibleProjectsClause } from '../access';
import { recordAudit, snapshot } from '../audit';
import { selectPage, type Page } from '../pagination';
import { checkPlacement } from '../placement';
import { conflict, notFound, unprocessable } from '../problem';
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
import { wakePreview } from '../preview-envs';
import {
  APP_SELECT,
  appSchema,
  appView,
  joinedRows,
  loadReachableApp,
  withAddons,
  type JoinedRow,
} from '../views/apps';
import {
  appResponse,
  assertChangeable,
  checkDeployment,
  findApp,
  reserveCapacity,
  type Ctx,
  type FoundApp,
} from './app-support';

const TAG = 'apps';

const scalingSchema = obj({
  min_replicas: int().required(),
  max_replicas: int().required(),
  target_cpu_percent: int().nullable().defined(),
});

/** Sends a state change to the app's workflow durably (outbox row in the caller's transaction). */
export async function enqueueCommand(
  ctx: Ctx,
  tx: Pick<Tx, 'enqueue'>,
  appUuid: string,
  action: StateAction | 'sync_ports',
  subId?: string,
) {
  const commandId = randomUUID();
  return tx.enqueue({
    // A fixed subId coalesces commands while one is in flight (the app workflow reads the database when it runs it).
    operation: 'app-command',
    workflow: 'appSendCommand',
    workspaceUuid: ctx.caller.workspaceUuid,
    resourceUuid: appUuid,
    subId: subId ?? commandId,
    args: [{ appUuid, command: { commandId, action } }],
  });
}

/** Updates columns of the app and records the route's declared audit action with the row's diff, in one transaction. */
async function updateSettings(
  ctx: RouteContext<{ uuid: string }, unknown, unknown>,
  set: Record<string, unknown>,
  check?: (app: FoundApp, m: any) => Promise<Record<string, unknown> | void>,
) {
  return write(ctx, async ({ m }) => {
    const app = await findApp(ctx, ctx.params.uuid, m, true);
    assertChangeable(app);
    const before = await snapshot(m, 'apps', app.uuid);
    const extra = (await check?.(app, m)) ?? {};
    const values = Object.entries({ ...set, ...extra }).filter(([, v]) => v !== undefined);
    if (values.length > 0) {
      await m.query(
        `UPDATE apps SET ${values.map(([k], i) => `${k} = $${i + 2}`).join(', ')}, updated_at = now() WHERE uuid = $1`,
        [
          app.uuid,
          ...values.map(([, v]) =>
            v !== null && typeof v === 'object' && !Array.isArray(v)
              ? JSON.stringify(v)
              : Array.isArray(v)
                ? JSON.stringify(v)
                : v,
          ),
        ],
      );
    }
    await recordAudit(m, ctx, { resourceUuid: app.uuid, before, after: await snapshot(m, 'apps', app.uuid) });
    return appResponse(ctx, app.uuid, m);
  });
}

const updateHandler = async (ctx: RouteContext<{ uuid: string }, unknown, unknown>) => {
  const b = ctx.body as yup.InferType<typeof updateAppBody>;
  return updateSettings(
    ctx,
    {
      label: b.label,
      maintenance: b.maintenance,
      manage_dns_records: b.manage_dns_records,
      internal_port: b.internal_port,
    },
    async (app, m) => {
      const extra: Record<string, unknown> = {};
      if (b.project_id !== undefined && b.project_id !== app.project_id) {
        await checkPlacement(ctx, m, { resourceId: app.resource_uuid, projectId: b.project_id });
        extra.project_id = b.project_id;
      }
      if (b.quota) {
        const quota = {
          ...app.quota,
          ...Object.fromEntries(Object.entries(b.quota).filter(([, v]) => v !== undefined)),
        };
        await reserveCapacity(ctx, m, app.uuid, app.resource_uuid, quota as FoundApp['quota']);
        extra.quota = quota;
      }
      return extra;
    },
  );
};

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
      const visible = await visibleProjectsClause(ctx, 'a.project_id', 2);
      const where = `a.workspace_uuid = $1 AND ${visible.sql} AND ($3::uuid IS NULL OR a.project_id = $3) AND ($4::text IS NULL OR a.state = $4)`;
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
        found.map((r) => appView(r, ctx.deps.config.publicUrl)),
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
        ctx.deps.config.publicUrl,
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
    handler: updateHandler,
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
    handler: updateHandler,
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
    async handler(ctx) {
      const b = ctx.body;
      return updateSettings(
        ctx,
        { private_access: b.private_access, allow_connections: b.allow_connections },
        async (app) => {
          const extra: Record<string, unknown> = {};
          if ((b.basic_auth_username === undefined) !== (b.basic_auth_password === undefined)) {
            throw unprocessable('basic_auth_username and basic_auth_password are set together', [
              { path: 'body.basic_auth_password', message: 'send both or neither' },
            ]);
          }
          if (b.basic_auth_username !== undefined) {
            extra.basic_auth_username = b.basic_auth_username;
            extra.basic_auth_password_sealed = ctx.deps.secretBox.seal(b.basic_auth_password!);
          }
          if (b.basic_auth_enabled === true && !app.has_basic_auth_credentials && b.basic_auth_username === undefined) {
            throw unprocessable('enabling basic auth needs basic_auth_username and basic_auth_password', [
              { path: 'body.basic_auth_password', message: 'required to enable basic auth' },
            ]);
          }
          if (b.basic_auth_enabled !== undefined) extra.basic_auth_enabled = b.basic_auth_enabled;
          return extra;
        },
      );
    },
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
    async handler(ctx) {
      const b = ctx.body;
      return updateSettings(ctx, { builder: b.builder }, async (app, m) => {
        if (b.deployment_method === undefined && b.deployment_config === undefined) return {};
        const method = b.deployment_method ?? app.deployment_method;
        const d = await checkDeployment(
          ctx,
          m,
          method,
          b.deployment_config ?? (b.deployment_method ? {} : app.deployment_config),
        );
        return {
          deployment_method: method,
          deployment_config: d.config,
          ...(method === 'parent_image' ? { parent_app_uuid: d.parentAppUuid } : {}),
        };
      });
    },
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
      const row = await one<{ health_checks: HealthCheck[] }>(
        ctx.deps.dataSource,
        `SELECT health_checks FROM apps WHERE uuid = $1`,
        [app.uuid],
      );
      return row!.health_checks;
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
    async handler(ctx) {
      const kinds = ctx.body.health_checks.map((h) => h.kind);
      if (new Set(kinds).size !== kinds.length)
        throw unprocessable('at most one health check of each kind', [
          { path: 'body.health_checks', message: 'kinds repeat' },
        ]);
      for (const [i, h] of ctx.body.health_checks.entries()) {
        if (h.protocol === 'http' && !h.path)
          throw unprocessable('an http health check needs a path', [
            { path: `body.health_checks[${i}].path`, message: 'required for http' },
          ]);
        if (h.timeout_seconds && h.period_seconds && h.timeout_seconds > h.period_seconds) {
          throw unprocessable('timeout_seconds must not exceed period_seconds', [
            { path: `body.health_checks[${i}].timeout_seconds`, message: 'exceeds period_seconds' },
          ]);
        }
      }
      return write(ctx, async ({ m }) => {
        const app = await findApp(ctx, ctx.params.uuid, m, true);
        assertChangeable(app);
        const checks: HealthCheck[] = ctx.body.health_checks.map((h) => ({
          kind: h.kind,
          protocol: h.protocol,
          path: h.protocol === 'http' ? h.path! : null,
          port: h.port ?? app.internal_port,
          initial_delay_seconds: h.initial_delay_seconds ?? 0,
          period_seconds: h.period_seconds ?? 10,
          timeout_seconds: h.timeout_seconds ?? 5,
          failure_threshold: h.failure_threshold ?? 3,
        }));
        const before = await snapshot(m, 'apps', app.uuid);
        await m.query(`UPDATE apps SET health_checks = $2, updated_at = now() WHERE uuid = $1`, [
          app.uuid,
          JSON.stringify(checks),
        ]);
        await recordAudit(m, ctx, { resourceUuid: app.uuid, before, after: await snapshot(m, 'apps', app.uuid) });
        return checks;
      });
    },
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
      const row = await one<{ scaling_profile: ScalingProfile }>(
        ctx.deps.dataSource,
        `SELECT scaling_profile FROM apps WHERE uuid = $1`,
        [app.uuid],
      );
      return row!.scaling_profile;
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
    async handler(ctx) {
      const b = ctx.body;
      if (b.min_replicas > b.max_replicas)
        throw unprocessable('min_replicas must not exceed max_replicas', [
          { path: 'body.min_replicas', message: 'greater than max_replicas' },
        ]);
      if (b.max_replicas > b.min_replicas && b.target_cpu_percent == null) {
        throw unprocessable('autoscaling (max_replicas above min_replicas) needs target_cpu_percent', [
          { path: 'body.target_cpu_percent', message: 'required to autoscale' },
        ]);
      }
      return write(ctx, async ({ m }) => {
        const app = await findApp(ctx, ctx.params.uuid, m, true);
        assertChangeable(app);
        const plan = await one<{ plan_type: string }>(
          m,
          `SELECT plan->>'plan_type' AS plan_type FROM compute_resources WHERE uuid = $1`,
          [app.resource_uuid],
        );
        if (plan?.plan_type === 'free' && b.max_replicas > 1)
          throw unprocessable('the free plan runs one replica', [
            { path: 'body.max_replicas', message: 'at most 1 on the free plan' },
          ]);
        const profile: ScalingProfile = {
          min_replicas: b.min_replicas,
          max_replicas: b.max_replicas,
          target_cpu_percent: b.target_cpu_percent ?? null,
        };
        const before = await snapshot(m, 'apps', app.uuid);
        await m.query(`UPDATE apps SET scaling_profile = $2, updated_at = now() WHERE uuid = $1`, [
          app.uuid,
          JSON.stringify(profile),
        ]);
        await recordAudit(m, ctx, { resourceUuid: app.uuid, before, after: await snapshot(m, 'apps', app.uuid) });
        return profile;
      });
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof stateBody>>({
    method: 'patch',
    path: '/apps/{uuid}/state',
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
        const app = await findApp(ctx, ctx.params.uuid, tx.m, true);
        const to = stateMove(ctx.body.action, app.state);
        if (!to) {
          throw unprocessable(`an app in state ${app.state} cannot ${ctx.body.action.replace('_', ' ')}`, [
            { path: 'body.action', message: `not allowed from ${app.state}` },
          ]);
        }
        const before = await snapshot(tx.m, 'apps', app.uuid);
        await tx.m.query(`UPDATE apps SET state = $2, updated_at = now() WHERE uuid = $1`, [app.uuid, to]);
        await recordAudit(tx.m, ctx, { resourceUuid: app.uuid, before, after: await snapshot(tx.m, 'apps', app.uuid) });
        await enqueueCommand(ctx, tx, app.uuid, ctx.body.action);
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
        const m = tx.m;
        const app = await findApp(ctx, ctx.params.uuid, m, true);
        if (app.state === 'cloning') throw conflict('the app is being cloned; delete it once the clone has finished');
        const before = await snapshot(m, 'apps', app.uuid);
        await m.query(`UPDATE apps SET state = 'deleting', updated_at = now() WHERE uuid = $1`, [app.uuid]);
        await recordAudit(m, ctx, { resourceUuid: app.uuid, before, after: await snapshot(m, 'apps', app.uuid) });
        // A preview environment's app goes the way of its environment: the environment's own
        // workflow removes the app and the environment together (as DELETE of the preview does).
        const preview = await one<{ parent_app_uuid: string; key: string }>(
          m,
          `UPDATE preview_environments SET status = 'destroying', updated_at = now() WHERE app_uuid = $1 RETURNING parent_app_uuid, key`,
          [app.uuid],
        );
        if (preview) {
          tx.afterCommit(() => wakePreview(ctx.deps, preview.parent_app_uuid, preview.key));
        } else {
          await tx.enqueue({
            operation: 'app-delete',
            workflow: 'appDelete',
            workspaceUuid: ctx.caller.workspaceUuid,
            resourceUuid: app.uuid,
            args: [{ appUuid: app.uuid }],
          });
        }
        return appResponse(ctx, app.uuid, m);
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
