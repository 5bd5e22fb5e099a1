import { setHandler } from '@temporalio/workflow';
import { stateQuery } from './common';
import { dbActivities, driverActivities } from './vpc-common';

export interface VpnUserDeleteInput {
  userUuid: string;
}

/** Where vpnUserDelete is, as its `state` query answers. */
export type VpnUserDeleteState = 'removing' | 'deleted';

/** Removes a WireGuard device from its gateway, then the record (and any key left in the vault). */
export async function vpnUserDelete(input: VpnUserDeleteInput): Promise<string> {
  let state: VpnUserDeleteState = 'removing';
  setHandler(stateQuery, () => state);
  await driverActivities.removeVpnPeer(input.userUuid);
  await dbActivities.deleteVpnUserRecord(input.userUuid);
  state = 'deleted';
  return state;
}
