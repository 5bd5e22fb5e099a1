import { rows } from '../../entities/sql';
import type { Scope } from '../access';
import { findVpc } from '../commands/vpcs';

/**
 * The rows of a table of a VPC's parts (subnets, gateways, ...), newest first, through its
 * SELECT of api/views/vpcs.ts (`alias`: the table's alias in it, if any); 404 for a VPC of another workspace.
 */
export async function vpcChildren<R>(scope: Scope, vpcUuid: string, select: string, alias = ''): Promise<R[]> {
  const vpc = await findVpc(scope, vpcUuid);
  const a = alias ? `${alias}.` : '';
  return rows<R>(
    scope.deps.dataSource,
    `${select} WHERE ${a}vpc_uuid = $1 ORDER BY ${a}created_at DESC, ${a}uuid DESC`,
    [vpc.uuid],
  );
}
