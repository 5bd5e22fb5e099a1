import { randomBytes, randomUUID } from 'node:crypto';
import type { DataType } from '../../domain/data';
import { Addon } from '../../entities/addon';
import { App } from '../../entities/app';
import { ComputeResource } from '../../entities/compute-resource';
import { insertReturning } from '../../entities/sql';
import { assertProjectVisible } from '../access';
import type { Caller } from '../context';
import { checkSettings, checkSubPath } from '../data-service-rules';
import { notFound, unprocessable } from '../problem';
import type { AddonCreateBody } from '../schemas/addons';
import { markNeedsRedeploy } from '../variables';
import { ruleScope } from './apps';
import { snapshotOf, type Tx } from './audited-write';

export type CreateAddonInput = AddonCreateBody & { appUuid: string };

const slug = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 30) || 'db';

/** The plan type of the compute resource (free, standard, ...): backups are refused on the free plan (BKP-03). */
export async function planTypeOf(tx: Tx, resourceUuid: string): Promise<string> {
  const resource = await tx.m.findOne(ComputeResource, {
    where: { uuid: resourceUuid },
    select: { uuid: true, plan: true },
  });
  return resource?.plan.plan_type ?? 'standard';
}

/**
 * An add-on (kind addon) or standalone service (kind service) in state `pending`, after the
 * per-type rules (BKP-03, ADD-09/10) and what the data-plane driver can run; credentials are
 * generated and sealed at once (never logged); its provisioning workflow is enqueued.
 */
export async function insertDataService(
  tx: Tx,
  caller: Caller,
  input: {
    kind: 'addon' | 'service';
    appUuid: string | null;
    projectId: string | null;
    resourceUuid: string;
    body: AddonCreateBody;
  },
): Promise<Addon> {
  const b = input.body;
  checkSettings(b.type, await planTypeOf(tx, input.resourceUuid), b);
  checkSubPath(b.type, b.sub_path, b.access_mode);
  const unsupported = tx.deps.capabilities?.engine(b.type as DataType) ?? null;
  if (unsupported) throw unprocessable(unsupported, [{ path: 'body.type', message: unsupported }]);
  const uuid = randomUUID();
  const name = `${slug(b.name ?? (input.kind === 'service' ? (b.label ?? b.type) : b.type))}-${randomBytes(4).toString('hex')}`;
  const isDb = b.type !== 'storage';
  const settings: Record<string, unknown> = { s3_enabled: b.s3_enabled ?? false };
  if (b.type === 'storage') {
    settings.access_mode = b.access_mode ?? 'shared';
    if (b.sub_path !== undefined) settings.sub_path = b.sub_path;
  }
  const values: Partial<Addon> = {
    uuid,
    workspace_uuid: caller.workspaceUuid,
    kind: input.kind,
    app_uuid: input.appUuid,
    project_uuid: input.projectId,
    resource_uuid: input.resourceUuid,
    type: b.type,
    name,
    label: b.label ?? name,
    state: 'pending',
    quota: { cpu_size: 0.5, ram_size: 512 * 2 ** 20, disk_size: 10 * 2 ** 30, ...b.quota },
    settings,
    public_access: b.public_access ?? false,
    backup_enabled: b.backup_enabled ?? false,
    database_name: b.type === 'postgres' || b.type === 'mysql' ? name.replace(/-/g, '_') : null,
    username: b.type === 'valkey' ? 'default' : isDb ? name.replace(/-/g, '_') : null,
    // The password is generated here, sealed at once and never logged.
    password_sealed: isDb ? tx.deps.secretBox.seal(randomBytes(24).toString('base64url')) : null,
    cluster_id: `c-${uuid}`,
  };
  const addon = (await insertReturning(tx.m, Addon, values))!;
  await tx.audit({ action: `${input.kind}.create`, resourceUuid: uuid, before: null, after: snapshotOf(addon) });
  // the app's environment gains the add-on's connection variables (`var`) at its next deployment
  if (input.appUuid) await markNeedsRedeploy(tx.m, { kind: 'app', uuid: input.appUuid });
  await tx.enqueue({
    operation: input.kind === 'service' ? 'service-provision' : 'addon-provision',
    workflow: 'addonProvision',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: uuid,
    args: [{ addonUuid: uuid, storage: b.type === 'storage' }],
  });
  return addon;
}

/** POST /apps/{uuid}/addons: an add-on of an app the caller can see, on the app's resource and project. */
export async function createAddon(tx: Tx, caller: Caller, input: CreateAddonInput): Promise<Addon> {
  const { appUuid, ...body } = input;
  const app = await tx.m.findOne(App, {
    where: { uuid: appUuid, workspace_uuid: caller.workspaceUuid },
    select: { uuid: true, project_uuid: true, resource_uuid: true },
  });
  if (!app) throw notFound('app');
  await assertProjectVisible(ruleScope(tx, caller), app.project_uuid, 'app');
  return insertDataService(tx, caller, {
    kind: 'addon',
    appUuid: app.uuid,
    projectId: app.project_uuid,
    resourceUuid: app.resource_uuid,
    body,
  });
}
