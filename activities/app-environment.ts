import path from 'node:path';
import { addonConnection } from '../domain/addon-connection';
import type { SecretBox } from '../domain/secret-box';
import type { AppQuota, HealthCheck } from '../entities/app';
import type { Db } from '../entities/sql';
import { one, rows } from '../entities/sql';
import { DEFAULT_APP_RUN, type AppMount, type AppRunSpec, type AppVpcAttachment } from '../platform/drivers/apps';

/**
 * The connection variables (`var`) of the add-ons an app uses: its own add-ons (no cron
 * jobs, no read replicas, none being deleted), oldest first; on a key two of them define,
 * the older add-on keeps it, so adding a second database never repoints DATABASE_URL.
 */
async function addonVariables(db: Db, box: SecretBox, appUuid: string): Promise<Record<string, string>> {
  const addons = await rows<{
    type: string;
    name: string;
    settings: Record<string, unknown>;
    username: string | null;
    database_name: string | null;
    password_sealed: string | null;
    public_access: boolean;
    endpoint: { host: string; port: number; public_host: string } | null;
  }>(
    db,
    `SELECT type, name, settings, username, database_name, password_sealed, public_access, endpoint FROM addons
      WHERE app_uuid = $1 AND kind = 'addon' AND type <> 'cronjob' AND replica_of IS NULL AND state <> 'deleting'
      ORDER BY created_at, uuid`,
    [appUuid],
  );
  const env: Record<string, string> = {};
  for (const a of addons) {
    const { var: vars } = addonConnection({
      ...a,
      password: a.password_sealed ? box.open(a.password_sealed) : null,
      region_domain: '',
    });
    for (const [k, v] of Object.entries(vars)) if (!(k in env)) env[k] = v;
  }
  return env;
}

/**
 * The effective environment of an app: its add-ons' connection variables, overlaid by its
 * project's variables, overlaid by its own (a key set by the user wins). Opened inside the
 * activity that hands it to the data plane; never a workflow argument or result.
 */
export async function effectiveEnvironment(db: Db, box: SecretBox, appUuid: string): Promise<Record<string, string>> {
  const found = await rows<{ key: string; value_sealed: string; own: boolean }>(
    db,
    `SELECT v.key, v.value_sealed, false AS own FROM apps a JOIN project_variables v ON v.project_uuid = a.project_uuid WHERE a.uuid = $1
     UNION ALL
     SELECT key, value_sealed, true AS own FROM app_variables WHERE app_uuid = $1`,
    [appUuid],
  );
  const env: Record<string, string> = await addonVariables(db, box, appUuid);
  for (const v of found.filter((r) => !r.own)) env[v.key] = box.open(v.value_sealed);
  for (const v of found.filter((r) => r.own)) env[v.key] = box.open(v.value_sealed);
  return env;
}

/** Where an app sees its own storage add-on (the contract names no mount path for add-ons). */
export const addonMountPath = (addonName: string) => `/data/${addonName}`;

/**
 * The volumes an app uses: its own storage add-ons (at `/data/<add-on name>`, their
 * `sub_path`) and the storage services mounted into it (`mount_app`: `mount_path`,
 * `sub_path`). None being deleted.
 */
export async function appMounts(db: Db, appUuid: string): Promise<AppMount[]> {
  const found = await rows<{ cluster_id: string; name: string; sub_path: string | null; mount_path: string | null }>(
    db,
    `SELECT cluster_id, name, settings->>'sub_path' AS sub_path, NULL AS mount_path FROM addons
      WHERE app_uuid = $1 AND kind = 'addon' AND type = 'storage' AND state <> 'deleting' AND cluster_id IS NOT NULL
     UNION ALL
     SELECT s.cluster_id, s.name, m.sub_path, m.mount_path FROM service_mounts m JOIN addons s ON s.uuid = m.service_uuid
      WHERE m.app_uuid = $1 AND s.state <> 'deleting' AND s.cluster_id IS NOT NULL`,
    [appUuid],
  );
  return found
    .map((r) => ({
      volumeId: r.cluster_id,
      subPath: r.sub_path,
      mountPath: path.posix.normalize(r.mount_path ?? addonMountPath(r.name)),
    }))
    .filter((m) => m.mountPath !== '/');
}

/**
 * How the app's processes run now, as the control plane holds it: the effective
 * environment, the web port, the quota, the health checks and the volumes. Built inside
 * the activity that hands it to the driver; never a workflow argument or result.
 */
export async function appRunSpec(db: Db, box: SecretBox, appUuid: string): Promise<AppRunSpec> {
  const app = await one<{
    internal_port: number | null;
    quota: Partial<AppQuota> | null;
    health_checks: Partial<HealthCheck>[] | null;
    workspace_uuid: string;
    service_name: string;
    allow_connections: boolean;
  }>(
    db,
    `SELECT internal_port, quota, health_checks, workspace_uuid, service_name, allow_connections FROM apps WHERE uuid = $1`,
    [appUuid],
  );
  return {
    env: await effectiveEnvironment(db, box, appUuid),
    internalPort: app?.internal_port ?? DEFAULT_APP_RUN.internalPort,
    cpuSize: app?.quota?.cpu_size ?? DEFAULT_APP_RUN.cpuSize,
    ramSize: app?.quota?.ram_size ?? DEFAULT_APP_RUN.ramSize,
    replicas: Math.max(1, app?.quota?.replicas ?? DEFAULT_APP_RUN.replicas),
    healthChecks: app?.health_checks ?? [],
    mounts: await appMounts(db, appUuid),
    ...(app
      ? {
          network: {
            workspace: app.workspace_uuid,
            serviceName: app.service_name,
            allowConnections: app.allow_connections,
            clusters: await attachedClusters(db, appUuid),
            vpcs: await vpcAttachments(db, appUuid),
          },
        }
      : {}),
  };
}

/** The clusters of the database add-ons attached to the app (their servers are what it may reach). */
async function attachedClusters(db: Db, appUuid: string): Promise<string[]> {
  const found = await rows<{ cluster_id: string }>(
    db,
    `SELECT cluster_id FROM addons
      WHERE app_uuid = $1 AND kind = 'addon' AND type IN ('postgres', 'mysql', 'valkey')
        AND cluster_id IS NOT NULL AND state <> 'deleting'`,
    [appUuid],
  );
  return found.map((r) => r.cluster_id);
}

/**
 * The VPC subnets the app's replicas are plugged into: its attachments being made or made
 * (an attach restarts the app before it is recorded attached), on IPv4 subnets of active VPCs.
 */
async function vpcAttachments(db: Db, appUuid: string): Promise<AppVpcAttachment[]> {
  const found = await rows<{
    uuid: string;
    vpc_uuid: string;
    vpc_v4: string;
    subnet_v4: string;
    address: string | null;
    public: boolean;
    fqdn: string | null;
  }>(
    db,
    `SELECT a.uuid, a.vpc_uuid, v.cidr_v4::text AS vpc_v4, s.cidr_v4::text AS subnet_v4, host(a.address_v4) AS address,
            s.public, a.fqdn
       FROM vpc_attachments a JOIN vpc_subnets s ON s.uuid = a.subnet_uuid JOIN vpcs v ON v.uuid = a.vpc_uuid
      WHERE a.attachable_type = 'App' AND a.attachable_uuid = $1 AND a.status IN ('attaching', 'attached')
        AND v.status = 'active' AND s.cidr_v4 IS NOT NULL
      ORDER BY a.created_at, a.uuid`,
    [appUuid],
  );
  return found.map((r) => ({
    attachmentUuid: r.uuid,
    vpcUuid: r.vpc_uuid,
    vpcCidrV4: r.vpc_v4,
    subnetCidrV4: r.subnet_v4,
    address: r.address,
    public: r.public,
    fqdn: r.fqdn,
  }));
}
