import { ApplicationFailure } from '@temporalio/common';
import { LOCAL_NO_VPC_FABRIC } from '../../../domain/vpc';
import type { NetworkDriver } from '../../../platform/drivers/network';

/**
 * The network part of the local driver: nothing to make, so every making operation fails
 * for good with the reason (a VPC's workflow records it as the failure), and removing what
 * was never made succeeds.
 */
export function refusingNetwork(): NetworkDriver {
  const refuse = async (): Promise<never> => {
    throw ApplicationFailure.nonRetryable(LOCAL_NO_VPC_FABRIC, 'NotSupportedByDriver');
  };
  const nothing = async (): Promise<void> => {};
  return {
    createVpc: refuse,
    createRouter: refuse,
    createResolver: refuse,
    attach: refuse,
    restartWorkload: refuse,
    applyRoutes: refuse,
    enableGateway: refuse,
    addPeer: refuse,
    createTunnel: refuse,
    deleteResolver: nothing,
    deleteRouter: nothing,
    deleteVpc: nothing,
    detach: nothing,
    disableGateway: nothing,
    removePeer: nothing,
    deleteTunnel: nothing,
  };
}
