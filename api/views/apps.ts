import type { SecretBox } from '../../domain/secret-box';
import { ADDON_COLUMNS, ADDON_FROM, APP_ADDONS_ORDER, APP_ADDONS_WHERE, appAddonsFromJson, loadAppAddons } from './addons';
import * as yup from 'yup';
import type { AppQuota } from '../../entities/app';
import type { Component, Plan } from '../../entities/compute-resource';
import type { RestrictionRule } from '../../domain/projects';
import type { Db } from '../../entities/sql';
import { preparedRows, rows } from '../../entities/sql';
import type { DataSource } from 'typeorm';
import { APP_STATES, BUILDERS, DEPLOYMENT_METHODS, DEPLOYMENT_STATES, internalUrl, publicUrl } from '../../domain/apps';
import { arr, bool, json, num, obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { iso, isoRequired } from './common';
import { regionSchema, resourceSchema, resourceView, type ResourceView } from './resources';

export const quotaSchema = obj({ cpu_size: num().required(), ram_size: num().required(), disk_size: num().required(), replicas: yup.number().strict().integer().required() });

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

/** The columns of an app row a view may read (never the sealed basic-auth password). */
export interface AppRow {
  uuid: string;
  workspace_uuid: string;
  name: string;
  label: string;
  state: string;
  project_id: string | null;
  resource_uuid: string;
  deployment_method: string;
  deployment_config: Record<string, unknown>;
  builder: string;
  manage_dns_records: boolean;
  maintenance: boolean;
  private_access: boolean;
  allow_connections: boolean;
  basic_auth_enabled: boolean;
  needs_redeploy: boolean;
  service_name: string;
  internal_port: number;
  quota: AppQuota;
  created_at: Date;
  updated_at: Date;
}

export interface JoinedRow extends AppRow {
  r_name: string;
  r_state: string;
  r_labels: string[];
  total_cpu_size: number;
  total_ram_size: string;
  total_disk_size: string;
  plan: Plan;
  components: Component[];
  r_created_at: Date;
  r_updated_at: Date;
  region_id: number;
  region_name: string;
  region_code: string;
  region_domain: string;
  used_cpu: number | null;
  used_ram: string | null;
  used_disk: string | null;
  project_ids: string[];
}

/**
 * Apps with their `platform` and region in one query for any number of them (used
 * capacity and project assignment are LATERAL sums over the app's own resource).
 */
export const APP_SELECT = `
  SELECT a.uuid, a.workspace_uuid, a.name, a.label, a.state, a.project_id, a.resource_uuid, a.deployment_method, a.deployment_config,
         a.builder, a.manage_dns_records, a.maintenance, a.private_access, a.allow_connections, a.basic_auth_enabled, a.service_name,
         a.internal_port, a.needs_redeploy_since IS NOT NULL AS needs_redeploy, a.quota, a.created_at, a.updated_at,
         c.name AS r_name, c.state AS r_state, c.labels AS r_labels, c.total_cpu_size, c.total_ram_size, c.total_disk_size, c.plan,
         c.components, c.created_at AS r_created_at, c.updated_at AS r_updated_at,
         g.id AS region_id, g.name AS region_name, g.code AS region_code, g.domain AS region_domain,
         u.cpu AS used_cpu, u.ram AS used_ram, u.disk AS used_disk, COALESCE(pr.ids, '{}') AS project_ids
    FROM apps a
    JOIN compute_resources c ON c.uuid = a.resource_uuid
    JOIN regions g ON g.id = c.region_id
    LEFT JOIN LATERAL (SELECT sum(cpu_size) AS cpu, sum(ram_size) AS ram, sum(disk_size) AS disk
                         FROM resource_allocations WHERE resource_uuid = c.uuid) u ON true
    LEFT JOIN LATERAL (SELECT array_agg(project_uuid::text ORDER BY created_at) AS ids
                         FROM project_resources WHERE resource_uuid = c.uuid) pr ON true`;

function platformOf(r: JoinedRow): ResourceView {
  return resourceView({
    ...r, uuid: r.resource_uuid, name: r.r_name, state: r.r_state, labels: r.r_labels, created_at: r.r_created_at, updated_at: r.r_updated_at,
  });
}

/** The Smart HTTP address a git_push app is pushed to (api/git-http.ts); `origin` is Config.publicUrl. */
export function gitUrl(origin: string, appName: string): string {
  return `${origin}/git/${appName}.git`;
}

/** The App response: an allow-list of fields (the basic-auth credentials are never read); `origin` is Config.publicUrl. */
export function appView(r: JoinedRow, origin: string): AppView {
  return {
    uuid: r.uuid,
    name: r.name,
    label: r.label,
    state: r.state as AppView['state'],
    project_id: r.project_id,
    deployment_method: r.deployment_method as AppView['deployment_method'],
    deployment_config: r.deployment_config,
    builder: r.builder as AppView['builder'],
    manage_dns_records: r.manage_dns_records,
    maintenance: r.maintenance,
    private_access: r.private_access,
    service_name: r.service_name,
    internal_url: internalUrl(r.service_name, r.internal_port),
    public_url: publicUrl(r.name, r.region_domain),
    git_url: r.deployment_method === 'git_push' ? gitUrl(origin, r.name) : null,
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
  const byApp = await loadAppAddons(db, secretBox, views.map((v) => v.uuid));
  return views.map((v) => ({ ...v, ...(byApp.get(v.uuid) ?? { addons: [], cronjobs: [] }) }));
}

export async function loadApp(db: Db, workspaceUuid: string, appUuid: string, origin: string): Promise<AppView | null> {
  const [row] = await rows<JoinedRow>(db, `${APP_SELECT} WHERE a.workspace_uuid = $1 AND a.uuid = $2`, [workspaceUuid, appUuid]);
  return row ? appView(row, origin) : null;
}

/**
 * The hot path of GET /apps/{uuid}: the App, the restrictions of its project, and its
 * add-ons and cron jobs in one statement (one round trip: docs/performance.md), or null when
 * there is no such app in the workspace or `reaches` refuses its project's restrictions.
 * The add-on views (which open sealed passwords) are built only once the project check passed.
 */
export async function loadReachableApp(ds: DataSource, secretBox: SecretBox, workspaceUuid: string, appUuid: string, origin: string,
  reaches: (restrictions: RestrictionRule[]) => boolean): Promise<AppView | null> {
  const [row] = await preparedRows<JoinedRow & { restrictions: RestrictionRule[] | null; addon_rows: Parameters<typeof appAddonsFromJson>[0] | null }>(ds, 'berth_app_show', REACHABLE_APP_SQL, [workspaceUuid, appUuid]);
  if (!row || !reaches(row.restrictions ?? [])) return null;
  return { ...appView(row, origin), ...appAddonsFromJson(row.addon_rows ?? [], secretBox) };
}

// inside the add-ons' subquery `a` is the add-on (ADDON_COLUMNS); the app is $2
const REACHABLE_APP_SQL = `${APP_SELECT.replace('FROM apps a', `, rs.rules AS restrictions, ad.list AS addon_rows FROM apps a`)}
     LEFT JOIN LATERAL (SELECT json_agg(json_build_object('subject_type', subject_type, 'user_uuid', user_uuid, 'role_name', role_name)) AS rules
                          FROM project_restrictions WHERE project_uuid = a.project_id) rs ON true
     LEFT JOIN LATERAL (SELECT json_agg(x ORDER BY x.created_at DESC, x.uuid DESC) AS list
                          FROM (SELECT ${ADDON_COLUMNS} FROM ${ADDON_FROM} WHERE a.app_uuid = $2 AND ${APP_ADDONS_WHERE} ORDER BY ${APP_ADDONS_ORDER}) x) ad ON true
     WHERE a.workspace_uuid = $1 AND a.uuid = $2`;

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

export interface DeploymentRow {
  uuid: string;
  state: string;
  commit_sha: string | null;
  commit_message: string | null;
  branch: string | null;
  deployment_method: string;
  image: string | null;
  message: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
  logs_stored_at: Date | null;
}

export const DEPLOYMENT_COLUMNS = 'uuid, state, commit_sha, commit_message, branch, deployment_method, image, message, created_at, updated_at, finished_at, logs_stored_at';

export type DeploymentView = yup.InferType<typeof deploymentSchema>;

export function deploymentView(d: DeploymentRow): DeploymentView {
  return {
    uuid: d.uuid, state: d.state as never, commit_sha: d.commit_sha, commit_message: d.commit_message, branch: d.branch,
    deployment_method: d.deployment_method as never, image: d.image, message: d.message,
    created_at: isoRequired(d.created_at), updated_at: isoRequired(d.updated_at), finished_at: iso(d.finished_at), logs_stored_at: iso(d.logs_stored_at),
  };
}
