import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { attachmentFqdn, type AttachableType } from '../domain/vpc';
import { insertReturning, one } from '../entities/sql';
import { VpcAttachment } from '../entities/vpc';
import { conflict, unprocessable } from './problem';
import type { Attachable } from './vpc-attachables';
import { VPC_SELECT, type AttachmentRow, type VpcRow } from './views/vpcs';

type Db = Pick<EntityManager, 'query'>;

interface SubnetRef {
  uuid: string;
  vpc_uuid: string;
  name: string;
}

/**
 * Checks that `workload` may be attached to `subnetUuid` of `vpc`: the VPC is active, the
 * subnet is one of its subnets, and the workload runs in the VPC's region (422 across
 * regions).
 */
export async function checkAttachment(
  db: Db,
  vpc: VpcRow,
  subnetUuid: string,
  workload: Pick<Attachable, 'regionId' | 'regionCode'>,
  paths = { subnet: 'body.subnet_uuid', workload: 'body.attachable_uuid' },
): Promise<SubnetRef> {
  if (vpc.status !== 'active') throw conflict(`the VPC is ${vpc.status}; workloads join an active VPC`);
  const subnet = await one<SubnetRef>(
    db,
    `SELECT uuid, vpc_uuid, name FROM vpc_subnets WHERE uuid = $1 AND vpc_uuid = $2`,
    [subnetUuid, vpc.uuid],
  );
  if (!subnet)
    throw unprocessable(`${subnetUuid} is not a subnet of the VPC ${vpc.name}`, [
      { path: paths.subnet, message: 'not a subnet of this VPC' },
    ]);
  if (workload.regionId !== vpc.region_id) {
    throw unprocessable(
      `the workload runs in region ${workload.regionCode} but the VPC ${vpc.name} is in ${vpc.region_code}; a VPC cannot span regions`,
      [{ path: paths.workload, message: `in region ${workload.regionCode}, not ${vpc.region_code}` }],
    );
  }
  return subnet;
}

/** Writes the attachment row (409 when the workload is already in this VPC). */
export async function insertAttachment(
  m: EntityManager,
  vpc: VpcRow,
  subnetUuid: string,
  type: AttachableType,
  workload: Pick<Attachable, 'uuid' | 'name' | 'cronJob'>,
  status: 'attaching' | 'attached',
): Promise<AttachmentRow> {
  // ON CONFLICT DO NOTHING: the uuid is fresh, so the one conflict possible is the workload (vpc_attachments_once).
  const row = await insertReturning(
    m,
    VpcAttachment,
    {
      uuid: randomUUID(),
      vpc_uuid: vpc.uuid,
      subnet_uuid: subnetUuid,
      attachable_type: type,
      attachable_uuid: workload.uuid,
      attachable_name: workload.name,
      cron_job: workload.cronJob,
      status,
      fqdn: attachmentFqdn(workload, vpc.name, vpc.region_domain),
    },
    { ignoreConflict: true },
  );
  if (!row) throw conflict(`this ${type} is already attached to the VPC ${vpc.name}`);
  return row;
}

export interface VpcJoinRequest {
  workspaceUuid: string;
  /** The compute resource the new app runs on. */
  resourceUuid: string;
  vpcUuid?: string | null;
  subnetUuid?: string | null;
}

export interface VpcJoin {
  vpc: VpcRow;
  subnetUuid: string;
}

/**
 * For POST /apps: validates `vpc_uuid` / `vpc_subnet_uuid`. The subnet implies its VPC (a
 * vpc_uuid sent beside it must be that VPC); with only vpc_uuid, the VPC's `default`
 * subnet (or its only subnet) is used. The VPC must be active and in the compute
 * resource's region. 422 for every reference that does not hold. Null when neither is set.
 */
export async function resolveVpcJoin(db: Db, req: VpcJoinRequest): Promise<VpcJoin | null> {
  if (!req.vpcUuid && !req.subnetUuid) return null;
  let vpcUuid = req.vpcUuid ?? null;
  let subnetUuid = req.subnetUuid ?? null;
  if (subnetUuid) {
    const subnet = await one<{ vpc_uuid: string }>(
      db,
      `SELECT s.vpc_uuid FROM vpc_subnets s JOIN vpcs v ON v.uuid = s.vpc_uuid WHERE s.uuid = $1 AND v.workspace_uuid = $2`,
      [subnetUuid, req.workspaceUuid],
    );
    if (!subnet)
      throw unprocessable(`vpc_subnet_uuid ${subnetUuid} is not a subnet of a VPC in this workspace`, [
        { path: 'body.vpc_subnet_uuid', message: 'no such subnet' },
      ]);
    if (vpcUuid && vpcUuid !== subnet.vpc_uuid) {
      throw unprocessable('vpc_subnet_uuid belongs to another VPC than vpc_uuid (the subnet implies its VPC)', [
        { path: 'body.vpc_uuid', message: 'not the VPC of vpc_subnet_uuid' },
      ]);
    }
    vpcUuid = subnet.vpc_uuid;
  }
  const vpc = await one<VpcRow>(db, `${VPC_SELECT} WHERE v.uuid = $1 AND v.workspace_uuid = $2`, [
    vpcUuid,
    req.workspaceUuid,
  ]);
  if (!vpc)
    throw unprocessable(`vpc_uuid ${vpcUuid} is not a VPC of this workspace`, [
      { path: 'body.vpc_uuid', message: 'no such VPC' },
    ]);
  if (!subnetUuid) {
    const pick = await one<{ uuid: string }>(
      db,
      `SELECT uuid FROM vpc_subnets WHERE vpc_uuid = $1 AND (name = 'default' OR (SELECT count(*) FROM vpc_subnets WHERE vpc_uuid = $1) = 1)
        ORDER BY name = 'default' DESC LIMIT 1`,
      [vpc.uuid],
    );
    if (!pick)
      throw unprocessable(`the VPC ${vpc.name} has no default subnet; send vpc_subnet_uuid`, [
        { path: 'body.vpc_subnet_uuid', message: 'required for this VPC' },
      ]);
    subnetUuid = pick.uuid;
  }
  const resource = await one<{ region_id: number; region_code: string }>(
    db,
    `SELECT c.region_id, g.code AS region_code FROM compute_resources c JOIN regions g ON g.id = c.region_id WHERE c.uuid = $1 AND c.workspace_uuid = $2`,
    [req.resourceUuid, req.workspaceUuid],
  );
  if (!resource)
    throw unprocessable('resource_id is not a compute resource of this workspace', [
      { path: 'body.resource_id', message: 'no such compute resource' },
    ]);
  await checkAttachment(
    db,
    vpc,
    subnetUuid,
    { regionId: resource.region_id, regionCode: resource.region_code },
    { subnet: 'body.vpc_subnet_uuid', workload: 'body.vpc_uuid' },
  );
  return { vpc, subnetUuid };
}

/**
 * Records the new app's attachment in the caller's transaction, already `attached`: the
 * app starts inside the VPC, so no restart happens (no vpcAttach workflow is started). The
 * app's provisioning passes the attachment to the driver before the app starts (activity
 * provisionApp, through plugInAppNetworks in activities/vpc.ts), which records the pod
 * address; if the driver cannot attach it, the app's provisioning fails.
 */
export async function recordVpcJoin(
  db: EntityManager,
  join: VpcJoin,
  app: { uuid: string; name: string },
): Promise<AttachmentRow> {
  return insertAttachment(
    db,
    join.vpc,
    join.subnetUuid,
    'App',
    { uuid: app.uuid, name: app.name, cronJob: false },
    'attached',
  );
}
