import { setHandler } from '@temporalio/workflow';
import { stateQuery } from './common';
import { dbActivities, driverActivities } from './vpc-common';
import { failureMessage } from './failures';

export interface VpnGatewayEnableInput {
  gatewayUuid: string;
}

/** Where vpnGatewayEnable is, as its `state` query answers. */
export type VpnGatewayEnableState = 'enabling' | 'failed' | 'active';

/** Turns a VPN gateway on through the driver: pending -> active (or failed). */
export async function vpnGatewayEnable(input: VpnGatewayEnableInput): Promise<string> {
  let state: VpnGatewayEnableState = 'enabling';
  setHandler(stateQuery, () => state);
  try {
    await driverActivities.enableVpnGateway(input.gatewayUuid);
  } catch (err) {
    await dbActivities.failVpcComponent('vpc_vpn_gateways', input.gatewayUuid, failureMessage(err));
    state = 'failed';
    return state;
  }
  await dbActivities.transition({
    table: 'vpc_vpn_gateways',
    uuid: input.gatewayUuid,
    from: ['pending'],
    to: 'active',
  });
  state = 'active';
  return state;
}
