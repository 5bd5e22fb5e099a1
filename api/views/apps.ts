import type { SecretBox } from '../../domain/secret-box';
import {
  ADDON_COLUMNS,
  ADDON_FROM,
  APP_ADDONS_ORDER,
  APP_ADDONS_WHERE,
  appAddonsFromJson,
  loadAppAddons,
} from './addons';
import * as yup from 'yup';
import { App, AppDeployment } from '../../entities/app';
import { columnsOf, hydrated, type Prefixed } from '../../entities/columns';
import { ComputeResource } from '../../entities/compute-resource';
import { Region } from '../../entities/region';
import type { RestrictionRule } from '../../domain/projects';
import type { Db } from '../../entities/sql';
import type { Config } from '../../platform/config';
import { preparedRows, rows } from '../../entities/sql';
import type { DataSource } from 'typeorm';
import { APP_STATES, BUILDERS, DEPLOYMENT_METHODS, DEPLOYMENT_STATES, internalUrl, publicUrl } from '../../domain/apps';
import { arr, bool, json, num, obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { iso, isoRequired } from './common';
import { regionSchema, resourceSchema, resourceView, type ResourceView } from './resources';

export const quotaSchema = obj({
  cpu_size: num().required(),
  ram_size: num().required(),
  disk_size: num().required(),
  replicas: yup.number().strict().integer().required(),
});

export const appSchema = obj({
  uuid: uuid().required(),
  name: str().required(),
  label: str().required(),
  state: oneOf(APP_STATES).required(),
  project_id: uuid().nullable().defined(),
  deployment_method: oneOf(DEPLOYMENT_METHODS).required(),
  deployment_config: json().required(),
  builder: oneOf(BUILDERS).required(),
  manage_dns_records: bool().required(),
  maintenance: bool().required(),
  private_access: bool().required(),
  service_name: str().required(),
  internal_url: str().required(),
  public_url: str().required(),
  /** git_push: where to push (`<origin>/git/<name>.git`, HTTP Basic with a token as password); null for other methods. */
  git_url: str().nullable().defined(),
  allow_connections: bool().required(),
  basic_auth_enabled: bool().required(),
  needs_redeploy: bool().required(),
  quota: quotaSchema.required(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
  platform: resourceSchema.required(),
  region: regionSchema.required(),
  addons: arr(json()).required(),
  cronjobs: arr(json()).required(),
});

export type AppView = yup.InferType<typeof appSchema>;

/** Columns of an app the view never reads: the basic-auth credentials, and what other areas keep. */
const APP_UNREAD = [
  'basic_auth_username',
  'basic_auth_password_sealed',
  'preview_parent_uuid',
  'health_checks',
  'scaling_profile',
  'parent_app_uuid',
  'parent_image_auto_sync',
  'created_by_member_uuid',
  'needs_redeploy_since',
] as const;

/** The resource columns the `platform` object shows (its workspace and creator stay inside). */
const RESOURCE_UNREAD = ['uuid', 'workspace_uuid', 'region_id', 'created_by_member_uuid'] as const;

/**
 * An app with its compute resource (fields `r_*`), its region (`region_*`), the resource's
 * used capacity and projects (LATERAL sums over the app's own resource).
 */
export type JoinedRow = Omit<App, (typeof APP_UNREAD)[number]> & { needs_redeploy: boolean } & Prefixed<
    Omit<ComputeResource, (typeof RESOURCE_UNREAD)[number]>,
    'r_'
  > &
  Prefixed<Region, 'region_'> & {
    used_cpu: number | null;
    used_ram: string | null;
    used_disk: string | null;
    project_ids: string[];
  };

/**
 * Apps with their `platform` and region in one query for any number of them. Raw: the
 * LATERAL sums and the prefixed joins are beyond the query builder; the lists come from the entities.
 */
export const APP_SELECT = `
  SELECT ${columnsOf(App, 'a', { except: APP_UNREAD })}, a.needs_redeploy_since IS NOT NULL AS needs_redeploy,
         ${columnsOf(ComputeResource, 'c', { except: RESOURCE_UNREAD, prefix: 'r_' })},
         ${columnsOf(Region, 'g', { prefix: 'region_' })},
         u.cpu AS used_cpu, u.ram AS used_ram, u.disk AS used_disk, COALESCE(pr.ids, '{}') AS project_ids
    FROM apps a
    JOIN compute_resources c ON c.uuid = a.resource_uuid
    JOIN regions g ON g.id = c.region_id
    LEFT JOIN LATERAL (SELECT sum(cpu_size) AS cpu, sum(ram_size) AS ram, sum(disk_size) AS disk
                         FROM resource_allocations WHERE resource_uuid = c.uuid) u ON true
    LEFT JOIN LATERAL (SELECT array_agg(project_uuid::text ORDER BY created_at) AS ids
                         FROM project_resources WHERE resource_uuid = c.uuid) pr ON true`;

/** Raw APP_SELECT rows as JoinedRow: the resource's transformers applied (bigint sizes as numbers). */
export function joinedRows<R extends JoinedRow>(found: R[]): R[] {
  return hydrated(ComputeResource, found, 'r_');
}

function platformOf(r: JoinedRow): ResourceView {
  return resourceView({
    uuid: r.resource_uuid,
    name: r.r_name,
    state: r.r_state,
    labels: r.r_labels,
    total_cpu_size: r.r_total_cpu_size,
    total_ram_size: r.r_total_ram_size,
    total_disk_size: r.r_total_disk_size,
    plan: r.r_plan,
    components: r.r_components,
    created_at: r.r_created_at,
    updated_at: r.r_updated_at,
    region_id: r.region_id,
    region_name: r.region_name,
    region_code: r.region_code,
    used_cpu: r.used_cpu,
    used_ram: r.used_ram,
    used_disk: r.used_disk,
    project_ids: r.project_ids,
  });
}

/** The Smart HTTP address a git_push app is pushed to (api/git-http.ts); `origin` is Config.publicUrl. */
export function gitUrl(origin: string, appName: string): string {
  return `${origin}/git/${appName}.git`;
}

/** Where an app's links point: the API's public origin (`git_url`) and the port apps answer HTTPS at (`public_url`). */
export type AppLinks = Pick<Config, 'publicUrl' | 'publicHttpsPort'>;

/** The App response: an allow-list of fields (the basic-auth credentials are never read). */
export function appView(r: JoinedRow, links: AppLinks): AppView {
  return {
    uuid: r.uuid,
    name: r.name,
    label: r.label,
    state: r.state as AppView['state'],
    project_id: r.project_uuid,
    deployment_method: r.deployment_method as AppView['deployment_method'],
    deployment_config: r.deployment_config,
    builder: r.builder as AppView['builder'],
    manage_dns_records: r.manage_dns_records,
    maintenance: r.maintenance,
    private_access: r.private_access,
    service_name: r.service_name,
    internal_url: internalUrl(r.service_name, r.internal_port),
    public_url: publicUrl(r.name, r.region_domain, links.publicHttpsPort),
    git_url: r.deployment_method === 'git_push' ? gitUrl(links.publicUrl, r.name) : null,
    allow_connections: r.allow_connections,
    basic_auth_enabled: r.basic_auth_enabled,
    needs_redeploy: r.needs_redeploy,
    quota: r.quota,
    created_at: isoRequired(r.created_at),
    updated_at: isoRequired(r.updated_at),
    platform: platformOf(r),
    region: { id: r.region_id, name: r.region_name, code: r.region_code },
    // Filled by withAddons (one query for any number of apps).
    addons: [],
    cronjobs: [],
  };
}

/** Fills the add-ons and cron jobs of app views, in one query for all of them. */
export async function withAddons(db: Db, secretBox: SecretBox, views: AppView[]): Promise<AppView[]> {
  const byApp = await loadAppAddons(
    db,
    secretBox,
    views.map((v) => v.uuid),
  );
  return views.map((v) => ({ ...v, ...(byApp.get(v.uuid) ?? { addons: [], cronjobs: [] }) }));
}

export async function loadApp(
  db: Db,
  workspaceUuid: string,
  appUuid: string,
  links: AppLinks,
): Promise<AppView | null> {
  const [row] = joinedRows(
    await rows<JoinedRow>(db, `${APP_SELECT} WHERE a.workspace_uuid = $1 AND a.uuid = $2`, [workspaceUuid, appUuid]),
  );
  return row ? appView(row, links) : null;
}

/** A reachable-app row as `row_to_json` answers it: timestamps and numeric sums arrive as JSON. */
type ReachableJson = Omit<
  JoinedRow,
  'created_at' | 'updated_at' | 'r_created_at' | 'r_updated_at' | 'used_ram' | 'used_disk'
> & {
  created_at: string;
  updated_at: string;
  r_created_at: string;
  r_updated_at: string;
  used_ram: number | null;
  used_disk: number | null;
  restrictions: RestrictionRule[] | null;
  addon_rows: Parameters<typeof appAddonsFromJson>[0] | null;
};

const numericText = (n: number | null) => (n === null ? null : String(n));

/**
 * The hot path of GET /apps/{uuid}: the App, the restrictions of its project, and its
 * add-ons and cron jobs in one statement (one round trip: docs/performance.md), or null when
 * there is no such app in the workspace or `reaches` refuses its project's restrictions.
 * The row comes as one JSON value (node-postgres then describes and parses one field, not
 * some forty). The add-on views (which open sealed passwords) are built only once the
 * project check passed.
 */
export async function loadReachableApp(
  ds: DataSource,
  secretBox: SecretBox,
  workspaceUuid: string,
  appUuid: string,
  links: AppLinks,
  reaches: (restrictions: RestrictionRule[]) => boolean,
): Promise<AppView | null> {
  const [found] = await preparedRows<{ app: ReachableJson }>(ds, 'berth_app_show', REACHABLE_APP_SQL, [
    workspaceUuid,
    appUuid,
  ]);
  const json = found?.app;
  if (!json || !reaches(json.restrictions ?? [])) return null;
  const [row] = joinedRows([
    {
      ...json,
      created_at: new Date(json.created_at),
      updated_at: new Date(json.updated_at),
      r_created_at: new Date(json.r_created_at),
      r_updated_at: new Date(json.r_updated_at),
      used_ram: numericText(json.used_ram),
      used_disk: numericText(json.used_disk),
    },
  ]);
  return Object.assign(appView(row!, links), appAddonsFromJson(json.addon_rows ?? [], secretBox));
}

// inside the add-ons' subquery `a` is the add-on (ADDON_COLUMNS); the app is $2
const REACHABLE_APP_SQL = `SELECT row_to_json(found) AS app FROM (
  ${APP_SELECT.replace('FROM apps a', `, rs.rules AS restrictions, ad.list AS addon_rows FROM apps a`)}
     LEFT JOIN LATERAL (SELECT json_agg(json_build_object('subject_type', subject_type, 'user_uuid', user_uuid, 'role_name', role_name)) AS rules
                          FROM project_restrictions WHERE project_uuid = a.project_uuid) rs ON true
     LEFT JOIN LATERAL (SELECT json_agg(x ORDER BY x.created_at DESC, x.uuid DESC) AS list
                          FROM (SELECT ${ADDON_COLUMNS} FROM ${ADDON_FROM} WHERE a.app_uuid = $2 AND ${APP_ADDONS_WHERE} ORDER BY ${APP_ADDONS_ORDER}) x) ad ON true
     WHERE a.workspace_uuid = $1 AND a.uuid = $2) found`;

// --- deployments ---

export const deploymentSchema = obj({
  uuid: uuid().required(),
  state: oneOf(DEPLOYMENT_STATES).required(),
  commit_sha: str().nullable().defined(),
  commit_message: str().nullable().defined(),
  branch: str().nullable().defined(),
  deployment_method: oneOf(DEPLOYMENT_METHODS).required(),
  image: str().nullable().defined(),
  message: str().nullable().defined(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
  finished_at: timestamp().nullable().defined(),
  logs_stored_at: timestamp().nullable().defined(),
});

/** One line of a deployment's build output (GET /apps/{uuid}/deployments/{d}/logs). */
export const buildLogEntrySchema = obj({
  timestamp: timestamp().required(),
  message: str().defined(),
});

export type DeploymentRow = AppDeployment;

export const DEPLOYMENT_COLUMNS = columnsOf(AppDeployment);

export type DeploymentView = yup.InferType<typeof deploymentSchema>;

export function deploymentView(d: DeploymentRow): DeploymentView {
  return {
    uuid: d.uuid,
    state: d.state as never,
    commit_sha: d.commit_sha,
    commit_message: d.commit_message,
    branch: d.branch,
    deployment_method: d.deployment_method as never,
    image: d.image,
    message: d.message,
    created_at: isoRequired(d.created_at),
    updated_at: isoRequired(d.updated_at),
    finished_at: iso(d.finished_at),
    logs_stored_at: iso(d.logs_stored_at),
  };
}
