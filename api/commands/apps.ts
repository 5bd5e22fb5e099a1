import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import type * as yup from 'yup';
import { DEFAULT_QUOTA } from '../../domain/app-defaults';
import { APP_OPERATION } from '../../domain/apps';
import { Addon } from '../../entities/addon';
import { App } from '../../entities/app';
import { copyOf, insertAppUnderFreshName, type NewApp } from '../../entities/app-rows';
import { assertProjectVisible } from '../access';
import type { Caller } from '../context';
import { conflict, notFound, unprocessable } from '../problem';
import { checkPlacement } from '../placement';
import { checkDeployment, reserveCapacity, type RuleScope } from '../routes/app-support';
import type { cloneBody, createAppBody } from '../schemas/apps';
import { recordVpcJoin, resolveVpcJoin } from '../vpc-join';
import { snapshotOf, type Tx } from './audited-write';

export type CreateAppInput = yup.InferType<typeof createAppBody>;
export type CloneAppInput = yup.InferType<typeof cloneBody> & { sourceUuid: string };

/** The scope the rule checks of a command run under: the caller, and the command's transaction for helpers' starts. */
export function ruleScope(tx: Tx, caller: Caller): RuleScope {
  return { caller, deps: tx.deps, dispatchAfter: tx.dispatchAfter };
}

/**
 * The whole app row, locked for the change (unless `lock` is false: a change of the app's
 * ports or certificates, which other rows' unique indexes order): in the caller's workspace
 * and in a project open to the caller, else 404.
 */
export async function appForChange(tx: Tx, scope: RuleScope, uuid: string, lock = true): Promise<App> {
  const qb = tx.m.createQueryBuilder(App, 'a');
  if (lock) qb.setLock('pessimistic_write');
  const app = await qb
    .where('a.uuid = :uuid AND a.workspace_uuid = :workspace', { uuid, workspace: scope.caller.workspaceUuid })
    .getOne();
  if (!app) throw notFound('app');
  await assertProjectVisible(scope, app.project_uuid, 'app');
  return app;
}

/** Inserts an app under a fresh suffixed name (APP-01) through the apps table's writer; 409 when none is free. */
async function insertApp(m: EntityManager, values: NewApp): Promise<App> {
  const app = await insertAppUnderFreshName(m, values);
  if (!app) throw conflict('could not find a free app name; try again');
  return app;
}

/** POST /apps: an app in state pending on a resource with room for its quota (CLN-04 placement), its lifecycle workflow enqueued. */
export async function createApp(tx: Tx, caller: Caller, b: CreateAppInput): Promise<App> {
  if (b.basic_auth_enabled && (!b.basic_auth_username || !b.basic_auth_password)) {
    throw unprocessable('basic_auth_enabled needs basic_auth_username and basic_auth_password', [
      { path: 'body.basic_auth_password', message: 'required when basic_auth_enabled' },
    ]);
  }
  const scope = ruleScope(tx, caller);
  const method = b.deployment_method ?? 'git_push';
  await checkPlacement(scope, tx.m, { resourceId: b.resource_id, projectId: b.project_id });
  const join = await resolveVpcJoin(tx.m, {
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: b.resource_id,
    vpcUuid: b.vpc_uuid,
    subnetUuid: b.vpc_subnet_uuid,
  });
  const deployment = await checkDeployment(scope, tx.m, method, b.deployment_config);
  const quota = {
    ...DEFAULT_QUOTA,
    ...Object.fromEntries(Object.entries(b.quota ?? {}).filter(([, v]) => v !== undefined)),
  };
  const app = await insertApp(tx.m, {
    uuid: randomUUID(),
    workspace_uuid: caller.workspaceUuid,
    project_uuid: b.project_id ?? null,
    resource_uuid: b.resource_id,
    service_name: b.name,
    label: b.label ?? b.name,
    state: 'pending',
    deployment_method: method,
    deployment_config: deployment.config,
    builder: b.builder ?? 'auto',
    manage_dns_records: b.manage_dns_records ?? true,
    maintenance: b.maintenance ?? false,
    private_access: b.private_access ?? false,
    allow_connections: b.allow_connections ?? true,
    basic_auth_enabled: b.basic_auth_enabled ?? false,
    basic_auth_username: b.basic_auth_username ?? null,
    basic_auth_password_sealed: b.basic_auth_password ? tx.deps.secretBox.seal(b.basic_auth_password) : null,
    quota,
    internal_port: b.internal_port ?? 8080,
    parent_app_uuid: deployment.parentAppUuid,
    created_by_member_uuid: caller.memberUuid,
  });
  await reserveCapacity(scope, tx.m, app.uuid, app.resource_uuid, app.quota);
  if (join) await recordVpcJoin(tx.m, join, app);
  await tx.audit({ action: 'app.create', resourceUuid: app.uuid, after: snapshotOf(app) });
  await tx.enqueue({
    operation: APP_OPERATION,
    workflow: 'appLifecycle',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: app.uuid,
    args: [{ appUuid: app.uuid }],
  });
  return app;
}

/** States in which an app has nothing settled to copy yet (or is going away). */
const NOT_CLONABLE = ['pending', 'assigned', 'cloning', 'deleting'];

/** CLN-02: the add-ons and cron jobs named must be the source app's (a cron job is no add-on here, nor the reverse). */
async function checkClonedParts(
  m: EntityManager,
  sourceUuid: string,
  addons: ReadonlyArray<{ uuid: string }>,
  cronjobs: readonly string[],
): Promise<void> {
  const named = [...addons.map((x) => x.uuid), ...cronjobs];
  const owned =
    named.length === 0
      ? []
      : await m
          .createQueryBuilder(Addon, 'a')
          .select(['a.uuid', 'a.type'])
          .where(`a.app_uuid = :app AND a.kind = 'addon' AND a.state <> 'deleting' AND a.uuid IN (:...named)`, {
            app: sourceUuid,
            named,
          })
          .getMany();
  const isAddon = new Set(owned.filter((r) => r.type !== 'cronjob').map((r) => r.uuid));
  const isCronjob = new Set(owned.filter((r) => r.type === 'cronjob').map((r) => r.uuid));
  const errors = [
    ...addons.flatMap((x, i) =>
      isAddon.has(x.uuid)
        ? []
        : [
            {
              path: `body.addons[${i}].uuid`,
              uuid: x.uuid,
              message: isCronjob.has(x.uuid)
                ? `${x.uuid} is a cron job: list it in cronjobs`
                : `${x.uuid} is not an add-on of this app`,
            },
          ],
    ),
    ...cronjobs.flatMap((c, i) =>
      isCronjob.has(c)
        ? []
        : [
            {
              path: `body.cronjobs[${i}]`,
              uuid: c,
              message: isAddon.has(c) ? `${c} is an add-on: list it in addons` : `${c} is not a cron job of this app`,
            },
          ],
    ),
  ];
  if (errors.length > 0) {
    throw unprocessable(
      `not add-ons or cron jobs of this app as listed: ${errors.map((x) => x.uuid).join(', ')}`,
      errors.map(({ path, message }) => ({ path, message })),
    );
  }
}

/**
 * POST /apps/{uuid}/clone (CLN-01..05): the copy, in state cloning, on a resource with room
 * for the source's quota and open to its project; the clone saga is enqueued. The source is
 * read once (locked), the new row never read back.
 */
export async function cloneApp(tx: Tx, caller: Caller, input: CloneAppInput): Promise<App> {
  const scope = ruleScope(tx, caller);
  const addons = input.addons ?? [];
  const cronjobs = input.cronjobs ?? [];
  const source = await appForChange(tx, scope, input.sourceUuid);
  if (NOT_CLONABLE.includes(source.state)) throw conflict(`an app in state ${source.state} cannot be cloned yet`);
  await checkClonedParts(tx.m, source.uuid, addons, cronjobs);
  const resourceUuid = input.resource_id ?? source.resource_uuid;
  const projectId = input.project_id !== undefined ? input.project_id : source.project_uuid;
  await checkPlacement(scope, tx.m, { resourceId: resourceUuid, projectId });
  const parentImage = input.use_parent_image;
  const app = await insertApp(tx.m, {
    ...copyOf(source, {
      uuid: randomUUID(),
      workspace_uuid: caller.workspaceUuid,
      project_uuid: projectId,
      resource_uuid: resourceUuid,
      service_name: input.name ?? source.service_name,
      label: input.label ?? `${source.label} (copy)`,
      parentImage,
      parentImageAutoSync: input.parent_image_auto_sync ?? false,
    }),
    created_by_member_uuid: caller.memberUuid,
  });
  await reserveCapacity(scope, tx.m, app.uuid, resourceUuid, source.quota);
  // the new app is the resource; the entry names its source
  await tx.audit({
    action: 'app.clone',
    resourceUuid: app.uuid,
    after: { ...snapshotOf(app), cloned_from: source.uuid },
  });
  await tx.enqueue({
    operation: 'app-clone',
    workflow: 'appClone',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: app.uuid,
    args: [
      {
        workspaceUuid: caller.workspaceUuid,
        sourceUuid: source.uuid,
        targetUuid: app.uuid,
        useParentImage: parentImage,
        flags: {
          clone_variables: input.clone_variables,
          clone_secret_files: input.clone_secret_files,
          clone_scaling_settings: input.clone_scaling_settings,
          clone_health_checks: input.clone_health_checks,
          clone_security: input.clone_security,
        },
        addons: addons.map((x) => ({ uuid: x.uuid, clone_data: x.clone_data })),
        cronjobs,
      },
    ],
  });
  return app;
}
