import { Addon } from '../../entities/addon';
import { App } from '../../entities/app';
import { columnsOf } from '../../entities/columns';
import { ComputeResource } from '../../entities/compute-resource';
import type { DataSource, EntityManager } from 'typeorm';
import * as yup from 'yup';
import { addonConnection } from '../../domain/addon-connection';
import type { SecretBox } from '../../domain/secret-box';
import { arr, int, json, num, obj, str, timestamp, uuid } from '../schemas/common';
import { isoRequired } from './common';

/** Raw (the query builder cannot replace an entity column by a COALESCE over a self-join): columns every add-on view reads (with the primary's credentials for a replica, and the region's domain). */
export const ADDON_COLUMNS = `${columnsOf(Addon, 'a', { except: ['database_name', 'username', 'password_sealed'] })},
  COALESCE(p.database_name, a.database_name) AS database_name, COALESCE(p.username, a.username) AS username,
  COALESCE(p.password_sealed, a.password_sealed) AS password_sealed, COALESCE(p.public_access, a.public_access) AS effective_public_access,
  g.domain AS region_domain, (c.plan->>'plan_type') AS plan_type`;
export const ADDON_FROM = `addons a LEFT JOIN addons p ON p.uuid = a.replica_of
  JOIN compute_resources c ON c.uuid = a.resource_uuid JOIN regions g ON g.id = c.region_id`;

/** A row of `addons` with what the views join to it. */
export interface AddonRow extends Addon {
  effective_public_access: boolean;
  region_domain: string;
  plan_type: string;
}

const nullableStr = () => yup.string().strict().nullable().defined();

export const addonSchema = obj({
  uuid: uuid().required(),
  name: str().required(),
  type: str().required(),
  label: str().required(),
  state: str().required(),
  quota: json().required(),
  settings: json().required(),
  var: json().required(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
  public_access: yup.boolean().strict().required(),
  backup_enabled: yup.boolean().strict().required(),
  backup_active: yup.boolean().strict().required(),
  replica_of: uuid().nullable().defined(),
  app_uuid: uuid().nullable().defined(),
  project_id: uuid().nullable().defined(),
  resource_id: uuid().required(),
  connection_details: obj({
    internal: obj({
      hostname: str().required(),
      database: nullableStr(),
      username: nullableStr(),
      password: nullableStr(),
      connection_url: str().required(),
      port: int().required(),
    }).required(),
    external: obj({ external_connection_url: nullableStr(), psql_command: nullableStr() }).required(),
  })
    .nullable()
    .defined(),
});
export type AddonView = yup.InferType<typeof addonSchema>;

/**
 * The contract's Add-on (also a cron job entry). Connection details and `var` carry the
 * generated credentials (the contract shows them there, placeholders <DB_PASSWORD> and
 * <CONNECTION_URL>); a replica shows its primary's credentials and public access (ADD-07).
 * Storage volumes and cron jobs have no connection details (null).
 */
export function addonView(row: AddonRow, secretBox: SecretBox): AddonView {
  const base = {
    uuid: row.uuid,
    name: row.name,
    type: row.type,
    label: row.label,
    state: row.state,
    quota: row.quota,
    settings: row.settings,
    created_at: isoRequired(row.created_at),
    updated_at: isoRequired(row.updated_at),
    public_access: row.effective_public_access,
    backup_enabled: row.backup_enabled,
    backup_active: row.backup_active,
    replica_of: row.replica_of,
    app_uuid: row.app_uuid,
    project_id: row.project_uuid,
    resource_id: row.resource_uuid,
  };
  const connection = addonConnection({
    type: row.type,
    name: row.name,
    settings: row.settings,
    username: row.username,
    database_name: row.database_name,
    password: row.password_sealed ? secretBox.open(row.password_sealed) : null,
    public_access: row.effective_public_access,
    region_domain: row.region_domain,
    endpoint: row.endpoint,
  });
  return { ...base, ...connection };
}

/**
 * Add-ons and cron jobs of any number of apps in one query, for the App view's `addons`
 * and `cronjobs` (cron jobs are excluded from `addons`: ADD-02, CRN-05). Newest first.
 */
export async function loadAppAddons(
  db: Pick<EntityManager, 'query'>,
  secretBox: SecretBox,
  appUuids: readonly string[],
): Promise<Map<string, { addons: AddonView[]; cronjobs: AddonView[] }>> {
  const out = new Map<string, { addons: AddonView[]; cronjobs: AddonView[] }>();
  for (const a of appUuids) out.set(a, { addons: [], cronjobs: [] });
  if (appUuids.length === 0) return out;
  const found: AddonRow[] = await db.query(
    `SELECT ${ADDON_COLUMNS} FROM ${ADDON_FROM} WHERE a.app_uuid = ANY($1::uuid[]) AND ${APP_ADDONS_WHERE} ORDER BY ${APP_ADDONS_ORDER}`,
    [appUuids],
  );
  for (const row of found) {
    const entry = out.get(row.app_uuid!)!;
    (row.type === 'cronjob' ? entry.cronjobs : entry.addons).push(addonView(row, secretBox));
  }
  return out;
}

/** Which add-ons an App view shows, newest first (loadAppAddons, and the one statement of GET /apps/{uuid}). */
export const APP_ADDONS_WHERE = `a.state <> 'deleting'`;
export const APP_ADDONS_ORDER = 'a.created_at DESC, a.uuid DESC';

/** The add-ons and cron jobs of one app from rows read as JSON (json_agg of ADDON_COLUMNS, in order): timestamps arrive as text. */
export function appAddonsFromJson(
  rows: ReadonlyArray<Omit<AddonRow, 'created_at' | 'updated_at'> & { created_at: string; updated_at: string }>,
  secretBox: SecretBox,
): { addons: AddonView[]; cronjobs: AddonView[] } {
  const out = { addons: [] as AddonView[], cronjobs: [] as AddonView[] };
  for (const json of rows) {
    const row: AddonRow = { ...json, created_at: new Date(json.created_at), updated_at: new Date(json.updated_at) };
    (row.type === 'cronjob' ? out.cronjobs : out.addons).push(addonView(row, secretBox));
  }
  return out;
}

/**
 * For VPC attachments (attachable types Service and Addon): the workspace, the region
 * (through the compute resource) and the fqdn of add-ons and services; cron jobs get no
 * fqdn. Unknown uuids are absent from the map.
 */
export async function lookupAttachableAddons(
  db: DataSource | EntityManager,
  uuids: readonly string[],
): Promise<
  Map<
    string,
    {
      kind: 'addon' | 'service';
      type: string;
      workspaceUuid: string;
      regionId: number;
      fqdn: string | null;
      projectId: string | null;
    }
  >
> {
  if (uuids.length === 0) return new Map();
  const { entities, raw } = await db
    .createQueryBuilder(Addon, 'a')
    .innerJoin(ComputeResource, 'c', 'c.uuid = a.resource_uuid')
    .leftJoin(App, 'ap', 'ap.uuid = a.app_uuid')
    .addSelect('c.region_id', 'region_id')
    .addSelect('ap.project_uuid', 'app_project')
    .where('a.uuid IN (:...uuids)', { uuids })
    .andWhere("a.state <> 'deleting'")
    .getRawAndEntities<{ a_uuid: string; region_id: number; app_project: string | null }>();
  const joined = new Map(raw.map((r) => [r.a_uuid, r]));
  return new Map(
    entities.map((r) => [
      r.uuid,
      {
        kind: r.kind,
        type: r.type,
        workspaceUuid: r.workspace_uuid,
        regionId: joined.get(r.uuid)!.region_id,
        fqdn: r.type === 'cronjob' ? null : `${r.name}.internal`,
        projectId: r.project_uuid ?? joined.get(r.uuid)!.app_project,
      },
    ]),
  );
}

export const backupsSchema = obj({
  backup_enabled: yup.boolean().strict().required(),
  backup_active: yup.boolean().strict().required(),
  recovery_window: obj({ earliest: timestamp().required(), latest: timestamp().required() }).nullable().defined(),
  backups: arr(obj({ name: str().required(), created_at: timestamp().required(), size: num().required() })).required(),
});

export const messageSchema = obj({ message: str().required() });

export const cronjobRunSchema = obj({
  uuid: uuid().required(),
  started_at: timestamp().required(),
  finished_at: timestamp().nullable().defined(),
  exit_code: int().nullable().defined(),
  log: str().defined(),
});
