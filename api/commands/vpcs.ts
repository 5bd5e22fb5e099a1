import { randomUUID } from 'node:crypto';
import { QueryFailedError, type EntityManager } from 'typeorm';
import {
  cidr4,
  defaultSubnet,
  formatCidr4,
  subnetProblems,
  subnetV6ById,
  subnetV6Of,
  v6Overlaps,
  v6Within,
} from '../../domain/vpc';
import { columnsOf, hydrated } from '../../entities/columns';
import { insertReturning, one, rows, updateReturning } from '../../entities/sql';
import { Vpc, VpcSiteConnection, VpcSubnet } from '../../entities/vpc';
import type { Scope } from '../access';
import type { Caller } from '../context';
import { badRequest, conflict, notFound, unprocessable } from '../problem';
import { SUBNET_SELECT, VPC_SELECT, type SubnetRow, type VpcRow } from '../views/vpcs';
import { snapshotOf, type Tx } from './audited-write';

/** The VPC, if it belongs to the caller's workspace (404 otherwise). `lock` takes a row lock. */
export async function findVpc(
  scope: Scope,
  vpcUuid: string,
  db: EntityManager = scope.deps.dataSource.manager,
  lock = false,
): Promise<VpcRow> {
  if (lock)
    await db.findOne(Vpc, { where: { uuid: vpcUuid }, select: { uuid: true }, lock: { mode: 'pessimistic_write' } });
  const row = await one<VpcRow>(db, `${VPC_SELECT} WHERE v.uuid = $1 AND v.workspace_uuid = $2`, [
    vpcUuid,
    scope.caller.workspaceUuid,
  ]);
  if (!row) throw notFound('VPC');
  return row;
}

/** Writes inside a VPC need it active (409 while pending, deleting or failed). */
export function assertVpcActive(vpc: VpcRow): void {
  if (vpc.status !== 'active') throw conflict(`the VPC is ${vpc.status}; this needs an active VPC`);
}

/** cidr_v4 refused: 400 when it is no IPv4 range at all, else 422 naming every rule it breaks. */
export function refuseCidr4(problems: ReadonlyArray<{ rule: string; message: string }>): void {
  if (problems.some((p) => p.rule === 'format'))
    throw badRequest(problems[0]!.message, [{ path: 'body.cidr_v4', message: problems[0]!.message }]);
  if (problems.length > 0) {
    throw unprocessable(
      `cidr_v4 is refused: ${problems.map((p) => p.message).join('; ')}`,
      problems.map((p) => ({ path: 'body.cidr_v4', message: p.message })),
    );
  }
}

/** The constraint a failed statement broke, if any. */
export function constraintOf(err: unknown): string | undefined {
  return err instanceof QueryFailedError ? (err.driverError as { constraint?: string }).constraint : undefined;
}

/** The VPC's entity as its row stands, for audit snapshots (the view's row adds joined and counted fields). */
async function vpcEntity(tx: Tx, uuid: string): Promise<Vpc> {
  return (await tx.m.findOneBy(Vpc, { uuid }))!;
}

/**
 * POST /vpcs (once validated): the VPC in state pending with its default subnet, the default
 * of its region unless one exists (or `mayBeDefault` is false: a retry after losing that race).
 */
export async function createVpc(
  tx: Tx,
  caller: Caller,
  input: { regionId: number; name: string; label: string; cidrV4: string; mayBeDefault: boolean },
): Promise<Vpc> {
  // Raw: ON CONFLICT names the one constraint it forgives (the name); the builder's orIgnore would also
  // swallow a race for the region's default, which must fail and retry; is_default is an expression.
  const [vpc] = hydrated(
    Vpc,
    await rows<Vpc>(
      tx.m,
      `INSERT INTO vpcs (uuid, workspace_uuid, region_id, name, label, cidr_v4, is_default)
       VALUES ($1, $2, $3, $4, $5, $6,
               $7 AND NOT EXISTS (SELECT 1 FROM vpcs WHERE workspace_uuid = $2 AND region_id = $3 AND is_default))
       ON CONFLICT ON CONSTRAINT vpcs_name_per_region DO NOTHING RETURNING ${columnsOf(Vpc)}`,
      [randomUUID(), caller.workspaceUuid, input.regionId, input.name, input.label, input.cidrV4, input.mayBeDefault],
    ),
  );
  if (!vpc) throw conflict(`a VPC named "${input.name}" already exists in this region`);
  await insertReturning(tx.m, VpcSubnet, {
    uuid: randomUUID(),
    vpc_uuid: vpc.uuid,
    name: 'default',
    family: 'dual',
    cidr_v4: formatCidr4(defaultSubnet(cidr4(input.cidrV4))),
    public: true,
  });
  await tx.audit({ action: 'vpc.create', resourceUuid: vpc.uuid, before: null, after: snapshotOf(vpc) });
  await tx.enqueue({
    operation: 'vpc-create',
    workflow: 'vpcCreate',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: vpc.uuid,
    args: [{ vpcUuid: vpc.uuid, cidrV4: input.cidrV4 }],
  });
  return vpc;
}

/** PUT /vpcs/{uuid}: the label, or whether it is its region's default (one per region: 422); 409 while it is being deleted. */
export async function updateVpc(
  tx: Tx,
  caller: Caller,
  input: { uuid: string; label?: string; is_default?: boolean },
): Promise<void> {
  const vpc = await findVpc({ caller, deps: tx.deps }, input.uuid, tx.m, true);
  if (vpc.status === 'deleting') throw conflict('the VPC is being deleted');
  if (input.is_default === true && !vpc.is_default) {
    const holder = await tx.m
      .createQueryBuilder(Vpc, 'v')
      .select(['v.name'])
      .where('v.workspace_uuid = :workspace AND v.region_id = :region AND v.is_default AND v.uuid <> :uuid', {
        workspace: caller.workspaceUuid,
        region: vpc.region_id,
        uuid: vpc.uuid,
      })
      .getOne();
    if (holder) {
      throw unprocessable(`the VPC "${holder.name}" is already the default of this region; unset it first`, [
        { path: 'body.is_default', message: 'another VPC in the region is the default' },
      ]);
    }
  }
  const before = await vpcEntity(tx, vpc.uuid);
  const after = (await updateReturning(tx.m, Vpc, vpc.uuid, {
    label: input.label ?? before.label,
    is_default: input.is_default ?? before.is_default,
  }))!;
  await tx.audit({
    action: 'vpc.update',
    resourceUuid: vpc.uuid,
    before: snapshotOf(before),
    after: snapshotOf(after),
  });
}

/**
 * DELETE /vpcs/{uuid}: the VPC moves to deleting and its workflow removes it; 422 while subnets
 * or site-to-site connections remain, 409 while pending. Deleting again changes nothing.
 */
export async function deleteVpc(tx: Tx, caller: Caller, input: { uuid: string }): Promise<void> {
  const found = await findVpc({ caller, deps: tx.deps }, input.uuid, tx.m, true);
  const before = await vpcEntity(tx, found.uuid);
  if (found.status === 'deleting') {
    await tx.audit({
      action: 'vpc.delete',
      resourceUuid: found.uuid,
      before: snapshotOf(before),
      after: snapshotOf(before),
    });
    return;
  }
  if (found.status === 'pending')
    throw conflict('the VPC is still being created; delete it once it is active or failed');
  if (found.subnet_count > 0)
    throw unprocessable(`the VPC still has ${found.subnet_count} subnet(s); delete them first`);
  const n = await tx.m.countBy(VpcSiteConnection, { vpc_uuid: found.uuid });
  if (n > 0)
    throw unprocessable(
      `the VPC still has ${n} site-to-site connection(s), each holding a billed public address; delete them first`,
    );
  const after = (await updateReturning(tx.m, Vpc, found.uuid, { status: 'deleting' }))!;
  await tx.enqueue({
    operation: 'vpc-delete',
    workflow: 'vpcDelete',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: found.uuid,
    args: [{ vpcUuid: found.uuid }],
  });
  await tx.audit({
    action: 'vpc.delete',
    resourceUuid: found.uuid,
    before: snapshotOf(before),
    after: snapshotOf(after),
  });
}

export interface CreateSubnetInput {
  vpcUuid: string;
  family: 'dual' | 'ipv4' | 'ipv6';
  name?: string;
  cidr_v4?: string;
  cidr_v6?: string;
  public?: boolean;
}

/** The subnet's IPv6 range: the one sent (inside the VPC's), else derived from its IPv4 range, else the highest free /64. */
function subnetV6(vpc: VpcRow, input: CreateSubnetInput, siblings: ReadonlyArray<Pick<VpcSubnet, 'cidr_v6'>>): string {
  const vpcV6 = vpc.cidr_v6!;
  const { cidr_v4: v4, cidr_v6: v6Sent } = input;
  let v6: string | null = null;
  if (v6Sent !== undefined) {
    if (!v6Within(vpcV6, v6Sent))
      throw unprocessable(`cidr_v6 ${v6Sent} is not inside the VPC range ${vpcV6}`, [
        { path: 'body.cidr_v6', message: `not inside ${vpcV6}` },
      ]);
    v6 = v6Sent;
  } else if (v4 !== undefined) {
    v6 = subnetV6Of(vpcV6, cidr4(vpc.cidr_v4), cidr4(v4));
  } else {
    // An IPv6-only subnet: the highest /64 of the VPC no sibling uses.
    for (let id = 0xffff; id >= 0 && v6 === null; id--) {
      const candidate = subnetV6ById(vpcV6, id);
      if (!siblings.some((s) => s.cidr_v6 && v6Overlaps(s.cidr_v6, candidate))) v6 = candidate;
    }
  }
  const clash = siblings.find((s) => s.cidr_v6 && v6 && v6Overlaps(s.cidr_v6, v6));
  if (clash) {
    throw unprocessable(
      `cidr_v6 ${v6} overlaps the subnet ${clash.cidr_v6}${v6Sent === undefined ? '; send cidr_v6 explicitly' : ''}`,
      [{ path: 'body.cidr_v6', message: `overlaps ${clash.cidr_v6}` }],
    );
  }
  return v6!;
}

/** POST /vpcs/{uuid}/subnets (shape checked): a subnet inside the active VPC, overlapping none of its siblings. */
export async function createSubnet(tx: Tx, caller: Caller, input: CreateSubnetInput): Promise<VpcSubnet> {
  const vpc = await findVpc({ caller, deps: tx.deps }, input.vpcUuid, tx.m, true);
  assertVpcActive(vpc);
  const v4 = input.cidr_v4;
  const siblings = await tx.m.find(VpcSubnet, {
    where: { vpc_uuid: vpc.uuid },
    select: { uuid: true, cidr_v4: true, cidr_v6: true },
  });
  if (v4 !== undefined) {
    const problems = subnetProblems(
      vpc.cidr_v4,
      v4,
      siblings.flatMap((s) => (s.cidr_v4 ? [s.cidr_v4] : [])),
    );
    refuseCidr4(problems);
  }
  const v6 = input.family === 'ipv4' ? null : subnetV6(vpc, input, siblings);
  const name = input.name ?? (v4 ? v4.replace(/[./]/g, '-') : `ipv6-${v6!.split(':')[3] || '0'}`);
  // Raw: ON CONFLICT forgives the name only; the builder's orIgnore would also swallow the exclusion
  // constraints' overlap violations (a concurrent creation), which must answer 422.
  const [subnet] = hydrated(
    VpcSubnet,
    await rows<VpcSubnet>(
      tx.m,
      `INSERT INTO vpc_subnets (uuid, vpc_uuid, name, family, cidr_v4, cidr_v6, public) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT ON CONSTRAINT vpc_subnets_name DO NOTHING RETURNING ${columnsOf(VpcSubnet)}`,
      [randomUUID(), vpc.uuid, name, input.family, v4 ?? null, v6, input.public ?? true],
    ),
  );
  if (!subnet) throw conflict(`a subnet named "${name}" already exists in this VPC`);
  await tx.audit({ action: 'vpc_subnet.create', resourceUuid: subnet.uuid, before: null, after: snapshotOf(subnet) });
  return subnet;
}

/** DELETE /vpcs/{uuid}/subnets/{subnet_uuid}: 422 while a workload is attached to it. */
export async function deleteSubnet(
  tx: Tx,
  caller: Caller,
  input: { vpcUuid: string; subnetUuid: string },
): Promise<void> {
  const vpc = await findVpc({ caller, deps: tx.deps }, input.vpcUuid, tx.m, true);
  const subnet = await one<SubnetRow>(tx.m, `${SUBNET_SELECT} WHERE s.uuid = $1 AND s.vpc_uuid = $2`, [
    input.subnetUuid,
    vpc.uuid,
  ]);
  if (!subnet) throw notFound('subnet');
  if (subnet.attachment_count > 0) {
    throw unprocessable(`${subnet.attachment_count} workload(s) are attached to the subnet; detach them first`);
  }
  const before = (await tx.m.findOneBy(VpcSubnet, { uuid: subnet.uuid }))!;
  await tx.m.delete(VpcSubnet, { uuid: subnet.uuid });
  await tx.audit({ action: 'vpc_subnet.delete', resourceUuid: subnet.uuid, before: snapshotOf(before), after: null });
}
