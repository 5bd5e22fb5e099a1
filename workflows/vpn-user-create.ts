import { condition, defineSignal, setHandler } from '@temporalio/workflow';
import { VAULT_EMPTIED_SIGNAL } from '../domain/vpc';
import { stateQuery } from './common';
import { dbActivities, driverActivities } from './vpc-common';
import { failureMessage } from './failures';

export interface VpnUserCreateInput {
  userUuid: string;
  /** How long the private key waits in the vault (15 minutes). */
  vaultMs: number;
}

export const vaultEmptied = defineSignal(VAULT_EMPTIED_SIGNAL);

/** Where vpnUserCreate is, as its `state` query answers. */
export type VpnUserCreateState =
  'activating' | 'failed' | 'vault-open' | 'config-read' | 'vault-expired' | 'key-destroyed';

/**
 * Activates a WireGuard device (adds it as a peer of the VPC's gateway), then keeps the
 * vault's timer: when the configuration is not read within the vault time, the private key
 * is destroyed. A read signals `vaultEmptied` and ends the wait early.
 */
export async function vpnUserCreate(input: VpnUserCreateInput): Promise<string> {
  let state: VpnUserCreateState = 'activating';
  let emptied = false;
  setHandler(stateQuery, () => state);
  setHandler(vaultEmptied, () => {
    emptied = true;
  });
  try {
    await driverActivities.addVpnPeer(input.userUuid);
  } catch (err) {
    await dbActivities.failVpcComponent('vpc_vpn_users', input.userUuid, failureMessage(err));
    await dbActivities.destroyVpnVault(input.userUuid);
    state = 'failed';
    return state;
  }
  await dbActivities.transition({ table: 'vpc_vpn_users', uuid: input.userUuid, from: ['pending'], to: 'active' });
  state = 'vault-open';
  const read = await condition(() => emptied, input.vaultMs);
  if (read) {
    state = 'config-read';
    return state;
  }
  state = 'vault-expired';
  await dbActivities.destroyVpnVault(input.userUuid);
  state = 'key-destroyed';
  return state;
}
