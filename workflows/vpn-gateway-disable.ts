import { setHandler } from '@temporalio/workflow';
import { stateQuery } from './common';
import { dbActivities, driverActivities } from './vpc-common';

export interface VpnGatewayDisableInput {
  gatewayUuid: string;
}

/** Where vpnGatewayDisable is, as its `state` query answers. */
export type VpnGatewayDisableState = 'disabling' | 'disabled';

/** Turns a VPN gateway off (its WireGuard devices go with it) and removes the record. */
export async function vpnGatewayDisable(input: VpnGatewayDisableInput): Promise<string> {
  let state: VpnGatewayDisableState = 'disabling';
  setHandler(stateQuery, () => state);
  await driverActivities.disableVpnGateway(input.gatewayUuid);
  await dbActivities.deleteVpnGatewayRecord(input.gatewayUuid);
  state = 'disabled';
  return state;
}
