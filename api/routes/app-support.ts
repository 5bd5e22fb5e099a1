import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
import { normalizeRepositoryUrl } from '../../domain/git-urls';
import type { AppQuota } from '../../entities/app';
import { holdAppCapacity } from '../../entities/capacity';
import { one } from '../../entities/sql';
import { assertProjectVisible, hiddenProjects, type Scope } from '../access';
import type { ApiDeps } from '../context';
import { validationProblem } from '../middleware/errors';
import { conflict, notFound, unprocessable } from '../problem';
import { withQuotaAlerts } from '../quota-alerts';
import type { AnyRouteContext } from '../route';
import { DEPLOYMENT_CONFIG } from '../schemas/apps';
import { loadApp, withAddons, type AppView } from '../views/apps';

export type Ctx = AnyRouteContext;

/** What the rule checks need of a request or a command: the caller, the deps, where a helper's workflow start goes. */
export interface RuleScope extends Scope {
  deps: ApiDeps;
  /** Starts, after commit, an operation a helper enqueued in the caller's transaction (a quota alert). */
  dispatchAfter: AnyRouteContext['dispatchAfter'];
}

/** What routes read of an app row before they change it. */
export interface FoundApp {
  uuid: string;
  workspace_uuid: string;
  project_uuid: string | null;
  resource_uuid: string;
  state: string;
  name: string;
  service_name: string;
  label: string;
  internal_port: number;
  deployment_method: string;
  deployment_config: Record<string, unknown>;
  quota: AppQuota;
  basic_auth_enabled: boolean;
  has_basic_auth_credentials: boolean;
  parent_app_uuid: string | null;
  preview_parent_uuid: string | null;
}

/**
 * The app of an `/apps/{uuid}/...` route, for every area: it exists in the caller's workspace
 * and its project is open to the caller; otherwise 404 (a restriction hides, never forbids).
 */
export async function findApp(
  ctx: Ctx,
  appUuid: string,
  db: Pick<EntityManager, 'query'> = ctx.deps.dataSource.manager,
  lock = false,
): Promise<FoundApp> {
  const app = await one<FoundApp>(
    db,
    `SELECT uuid, workspace_uuid, project_uuid, resource_uuid, state, name, service_name, label, internal_port, deployment_method,
            deployment_config, quota, basic_auth_enabled, basic_auth_password_sealed IS NOT NULL AS has_basic_auth_credentials, parent_app_uuid, preview_parent_uuid
       FROM apps WHERE uuid = $1 AND workspace_uuid = $2${lock ? ' FOR UPDATE' : ''}`,
    [appUuid, ctx.caller.workspaceUuid],
  );
  if (!app) throw notFound('app');
  await assertProjectVisible(ctx, app.project_uuid, 'app');
  return app;
}

/** Apps being deleted or cloned take no other change. */
export function assertChangeable(app: Pick<FoundApp, 'state'>): void {
  if (app.state === 'deleting') throw conflict('the app is being deleted');
  if (app.state === 'cloning') throw conflict('the app is being cloned; wait until it leaves the cloning state');
}

export async function appResponse(
  ctx: Ctx,
  appUuid: string,
  db: Pick<EntityManager, 'query'> = ctx.deps.dataSource.manager,
): Promise<AppView> {
  const view = await loadApp(db, ctx.caller.workspaceUuid, appUuid, ctx.deps.config);
  if (!view) throw notFound('app');
  return (await withAddons(db, ctx.deps.secretBox, [view]))[0]!;
}

/** Holds the quota on the resource (locked while summed, so two creations cannot both take the last capacity); crossing 80% or 100% alerts. */
export async function reserveCapacity(
  ctx: RuleScope,
  m: Pick<EntityManager, 'query'>,
  appUuid: string,
  resourceUuid: string,
  quota: AppQuota,
): Promise<void> {
  const short = await withQuotaAlerts(ctx, m, resourceUuid, () => holdAppCapacity(m, appUuid, resourceUuid, quota));
  if (short.length > 0) {
    throw unprocessable(
      `not enough ${short.join(', ')} left on the compute resource for this quota`,
      short.map((s) => ({
        path: `body.quota.${s}_size`,
        message: 'exceeds the available capacity of the compute resource',
      })),
    );
  }
}

/** The repository of a public_git or github app (domain/git-urls.ts); for github, `owner/repo` names a GitHub repository. */
function checkRepository(ctx: RuleScope, method: string, repository: string): string {
  const r = normalizeRepositoryUrl(
    repository,
    ctx.deps.config.gitAllowFileUrls,
    method === 'github' ? { ownerRepoHost: 'github.com' } : {},
  );
  if ('problem' in r)
    throw unprocessable(`deployment_config.repository ${r.problem}`, [
      { path: 'body.deployment_config.repository', message: r.problem },
    ]);
  return r.url;
}

/**
 * Validates deployment_config for the method (shape: 400; rules: 422). A
 * container_registry app needs a driver that runs images (else the driver's reason) and
 * deployment_config.credential_id naming a registry credential of the workspace; a
 * parent_image app a parent app of the workspace.
 */
export async function checkDeployment(
  ctx: RuleScope,
  m: Pick<EntityManager, 'query'>,
  method: string,
  config: Record<string, unknown> | undefined,
): Promise<{ config: Record<string, unknown>; parentAppUuid: string | null }> {
  let valid: Record<string, unknown>;
  try {
    valid = await DEPLOYMENT_CONFIG[method]!.validate(config ?? {}, { abortEarly: false });
  } catch (err) {
    if (err instanceof yup.ValidationError) throw validationProblem(err, 'body.deployment_config');
    throw err;
  }
  const out: Record<string, unknown> = Object.fromEntries(Object.entries(valid).filter(([, v]) => v !== undefined));
  if (typeof out.repository === 'string') out.repository = checkRepository(ctx, method, out.repository);
  let parentAppUuid: string | null = null;
  if (method === 'container_registry') {
    const refusal = ctx.deps.capabilities?.images ?? null;
    if (refusal)
      throw unprocessable(refusal, [{ path: 'body.deployment_method', message: 'container images do not run here' }]);
    if (!out.credential_id) {
      throw unprocessable('a container_registry app needs deployment_config.credential_id', [
        { path: 'body.deployment_config.credential_id', message: 'required for container_registry' },
      ]);
    }
    const credential = await one(
      m,
      `SELECT 1 FROM container_registry_credentials WHERE uuid = $1 AND workspace_uuid = $2`,
      [out.credential_id, ctx.caller.workspaceUuid],
    );
    if (!credential) {
      throw unprocessable('deployment_config.credential_id is not a container registry credential of this workspace', [
        { path: 'body.deployment_config.credential_id', message: 'no such credential in this workspace' },
      ]);
    }
  }
  if (method === 'parent_image') {
    if (!out.parent_app_id) {
      throw unprocessable('a parent_image app needs deployment_config.parent_app_id', [
        { path: 'body.deployment_config.parent_app_id', message: 'required for parent_image' },
      ]);
    }
    const parent = await one<{ project_uuid: string | null }>(
      m,
      `SELECT project_uuid FROM apps WHERE uuid = $1 AND workspace_uuid = $2`,
      [out.parent_app_id, ctx.caller.workspaceUuid],
    );
    if (!parent || (parent.project_uuid && (await hiddenProjects(ctx)).has(parent.project_uuid))) {
      throw unprocessable('deployment_config.parent_app_id is not an app of this workspace', [
        { path: 'body.deployment_config.parent_app_id', message: 'no such app' },
      ]);
    }
    parentAppUuid = out.parent_app_id as string;
  }
  return { config: out, parentAppUuid };
}
