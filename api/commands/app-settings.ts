import type * as yup from 'yup';
import { App, type HealthCheck, type ScalingProfile } from '../../entities/app';
import { updateReturning } from '../../entities/sql';
import type { Caller } from '../context';
import { checkPlacement } from '../placement';
import { unprocessable } from '../problem';
import { assertChangeable, checkDeployment, reserveCapacity } from '../routes/app-support';
import type {
  deploymentSettingsBody,
  healthChecksBody,
  scalingProfileBody,
  securityBody,
  updateAppBody,
} from '../schemas/apps';
import { planTypeOf } from './addons';
import { appForChange, ruleScope } from './apps';
import { snapshotOf, type Tx } from './audited-write';

type WithUuid<S extends yup.ISchema<unknown>> = yup.InferType<S> & { uuid: string };

/**
 * Changes settings of an app the caller can see that is neither being deleted nor cloned:
 * `decide` checks the rules on the locked row and returns the columns to set (undefined
 * keeps a value); the change is recorded under `action` with the row before and after.
 */
async function changeApp(
  tx: Tx,
  caller: Caller,
  uuid: string,
  action: string,
  decide: (app: App) => Promise<Partial<App>> | Partial<App>,
): Promise<App> {
  const app = await appForChange(tx, ruleScope(tx, caller), uuid);
  assertChangeable(app);
  const changes = Object.fromEntries(Object.entries(await decide(app)).filter(([, v]) => v !== undefined));
  const after = Object.keys(changes).length > 0 ? (await updateReturning(tx.m, App, app.uuid, changes))! : app;
  await tx.audit({ action, resourceUuid: app.uuid, before: snapshotOf(app), after: snapshotOf(after) });
  return after;
}

/** PUT/PATCH /apps/{uuid}: label, project (placement checked), maintenance, DNS management, internal port, quota (capacity held). */
export function updateApp(tx: Tx, caller: Caller, b: WithUuid<typeof updateAppBody>): Promise<App> {
  return changeApp(tx, caller, b.uuid, 'app.update', async (app) => {
    const scope = ruleScope(tx, caller);
    const changes: Partial<App> = {
      label: b.label,
      maintenance: b.maintenance,
      manage_dns_records: b.manage_dns_records,
      internal_port: b.internal_port,
    };
    if (b.project_id !== undefined && b.project_id !== app.project_uuid) {
      await checkPlacement(scope, tx.m, { resourceId: app.resource_uuid, projectId: b.project_id });
      changes.project_uuid = b.project_id;
    }
    if (b.quota) {
      const quota = {
        ...app.quota,
        ...Object.fromEntries(Object.entries(b.quota).filter(([, v]) => v !== undefined)),
      };
      await reserveCapacity(scope, tx.m, app.uuid, app.resource_uuid, quota);
      changes.quota = quota;
    }
    return changes;
  });
}

/** PUT /apps/{uuid}/security: HTTP Basic Auth (credentials set together, sealed), private access, internal connections. */
export function updateAppSecurity(tx: Tx, caller: Caller, b: WithUuid<typeof securityBody>): Promise<App> {
  return changeApp(tx, caller, b.uuid, 'app.update_security', (app) => {
    if ((b.basic_auth_username === undefined) !== (b.basic_auth_password === undefined)) {
      throw unprocessable('basic_auth_username and basic_auth_password are set together', [
        { path: 'body.basic_auth_password', message: 'send both or neither' },
      ]);
    }
    if (b.basic_auth_enabled === true && !app.basic_auth_password_sealed && b.basic_auth_username === undefined) {
      throw unprocessable('enabling basic auth needs basic_auth_username and basic_auth_password', [
        { path: 'body.basic_auth_password', message: 'required to enable basic auth' },
      ]);
    }
    return {
      private_access: b.private_access,
      allow_connections: b.allow_connections,
      basic_auth_username: b.basic_auth_username,
      basic_auth_password_sealed:
        b.basic_auth_password === undefined ? undefined : tx.deps.secretBox.seal(b.basic_auth_password),
      basic_auth_enabled: b.basic_auth_enabled,
    };
  });
}

/** PUT /apps/{uuid}/deployment: method, deployment_config (checked for the method), builder; the next deployment uses them. */
export function updateAppDeployment(tx: Tx, caller: Caller, b: WithUuid<typeof deploymentSettingsBody>): Promise<App> {
  return changeApp(tx, caller, b.uuid, 'app.update_deployment', async (app) => {
    if (b.deployment_method === undefined && b.deployment_config === undefined) return { builder: b.builder };
    const method = b.deployment_method ?? app.deployment_method;
    const d = await checkDeployment(
      ruleScope(tx, caller),
      tx.m,
      method,
      b.deployment_config ?? (b.deployment_method ? {} : app.deployment_config),
    );
    return {
      builder: b.builder,
      deployment_method: method,
      deployment_config: d.config,
      ...(method === 'parent_image' ? { parent_app_uuid: d.parentAppUuid } : {}),
    };
  });
}

/** The health check rules: one of each kind, http needs a path, a timeout within its period. */
function checkHealthChecks(checks: yup.InferType<typeof healthChecksBody>['health_checks']): void {
  const kinds = checks.map((h) => h.kind);
  if (new Set(kinds).size !== kinds.length)
    throw unprocessable('at most one health check of each kind', [
      { path: 'body.health_checks', message: 'kinds repeat' },
    ]);
  for (const [i, h] of checks.entries()) {
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
}

/** PUT /apps/{uuid}/health_checks: the app's health checks replaced, defaults filled in (the port: the app's internal port). */
export async function setHealthChecks(
  tx: Tx,
  caller: Caller,
  b: WithUuid<typeof healthChecksBody>,
): Promise<HealthCheck[]> {
  checkHealthChecks(b.health_checks);
  let checks: HealthCheck[] = [];
  await changeApp(tx, caller, b.uuid, 'app.update_health_checks', (app) => {
    checks = b.health_checks.map((h) => ({
      kind: h.kind,
      protocol: h.protocol,
      path: h.protocol === 'http' ? h.path! : null,
      port: h.port ?? app.internal_port,
      initial_delay_seconds: h.initial_delay_seconds ?? 0,
      period_seconds: h.period_seconds ?? 10,
      timeout_seconds: h.timeout_seconds ?? 5,
      failure_threshold: h.failure_threshold ?? 3,
    }));
    return { health_checks: checks };
  });
  return checks;
}

/** PUT /apps/{uuid}/scaling_profile: the replica range (the free plan runs one replica) and the CPU target autoscaling needs. */
export async function setScalingProfile(
  tx: Tx,
  caller: Caller,
  b: WithUuid<typeof scalingProfileBody>,
): Promise<ScalingProfile> {
  if (b.min_replicas > b.max_replicas)
    throw unprocessable('min_replicas must not exceed max_replicas', [
      { path: 'body.min_replicas', message: 'greater than max_replicas' },
    ]);
  if (b.max_replicas > b.min_replicas && b.target_cpu_percent == null) {
    throw unprocessable('autoscaling (max_replicas above min_replicas) needs target_cpu_percent', [
      { path: 'body.target_cpu_percent', message: 'required to autoscale' },
    ]);
  }
  const profile: ScalingProfile = {
    min_replicas: b.min_replicas,
    max_replicas: b.max_replicas,
    target_cpu_percent: b.target_cpu_percent ?? null,
  };
  await changeApp(tx, caller, b.uuid, 'app.update_scaling', async (app) => {
    if ((await planTypeOf(tx, app.resource_uuid)) === 'free' && b.max_replicas > 1)
      throw unprocessable('the free plan runs one replica', [
        { path: 'body.max_replicas', message: 'at most 1 on the free plan' },
      ]);
    return { scaling_profile: profile };
  });
  return profile;
}
