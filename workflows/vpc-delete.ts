import { setHandler } from '@temporalio/workflow';
import { stateQuery } from './common';
import { dbActivities, driverActivities } from './vpc-common';

export interface VpcDeleteInput {
  vpcUuid: string;
}

/** Where vpcDelete is, as its `state` query answers. */
export type VpcDeleteState = 'removing' | 'deleting' | 'deleted';

/** Deletes a VPC (status deleting): removes resolver, router and VPC, then the record. */
export async function vpcDelete(input: VpcDeleteInput): Promise<string> {
  let state: VpcDeleteState = 'removing';
  setHandler(stateQuery, () => state);
  await driverActivities.removeVpcNetwork(input.vpcUuid);
  state = 'deleting';
  await dbActivities.deleteVpcRecord(input.vpcUuid);
  state = 'deleted';
  return state;
}
