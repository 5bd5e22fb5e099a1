import { setHandler } from '@temporalio/workflow';
import { deriveVpcAddressing } from '../domain/vpc';
import { stateQuery } from './common';
import { dbActivities, driverActivities } from './vpc-common';
import { failureMessage } from './failures';

export interface VpcCreateInput {
  vpcUuid: string;
  cidrV4: string;
}

/** Where vpcCreate is, as its `state` query answers. */
export type VpcCreateState = 'deriving' | 'provisioning' | 'compensating' | 'failed' | 'activating' | 'active';

/**
 * Creates a VPC: derives its IPv6 range (ULA /48 from the uuid), resolver (base + 2) and
 * VPN pool, provisions VPC, router and resolver through the driver, and moves the VPC from
 * pending to active. When the driver gives up, whatever was created is removed and the
 * VPC is failed.
 */
export async function vpcCreate(input: VpcCreateInput): Promise<string> {
  let state: VpcCreateState = 'deriving';
  setHandler(stateQuery, () => state);
  const addressing = deriveVpcAddressing(input.vpcUuid, input.cidrV4);
  try {
    state = 'provisioning';
    await driverActivities.provisionVpcNetwork(input.vpcUuid, addressing);
  } catch (err) {
    state = 'compensating';
    const reason = failureMessage(err);
    await driverActivities.removeVpcNetwork(input.vpcUuid).catch(() => undefined);
    await dbActivities.failVpc(input.vpcUuid, reason);
    state = 'failed';
    return state;
  }
  state = 'activating';
  await dbActivities.activateVpc(input.vpcUuid, addressing);
  state = 'active';
  return state;
}
