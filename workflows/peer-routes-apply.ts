import { setHandler } from '@temporalio/workflow';
import type { RouteResult } from '../platform/drivers/network';
import { stateQuery } from './common';
import { dbActivities, driverActivities } from './vpc-common';
import { failureMessage } from './failures';

export interface PeerRoutesApplyInput {
  vpcUuid: string;
  applyUuid: string;
}

/** Where peerRoutesApply is, as its `state` query answers. */
export type PeerRoutesApplyState = 'installing' | 'restarting' | 'recording' | 'done';

/**
 * Applies the peer routes an apply claimed: installs the VPC's route table through the
 * driver, restarts every attached workload once so it picks the routes up, then moves
 * each staged route to applied or failed.
 */
export async function peerRoutesApply(input: PeerRoutesApplyInput): Promise<{ applied: number; failed: number }> {
  let state: PeerRoutesApplyState = 'installing';
  setHandler(stateQuery, () => state);
  let results: RouteResult[] = [];
  let failAll: string | null = null;
  try {
    results = await driverActivities.applyPeerRoutes(input.vpcUuid, input.applyUuid);
    state = 'restarting';
    const attachments = await dbActivities.listAttachedWorkloads(input.vpcUuid);
    await Promise.all(attachments.map((a) => driverActivities.restartForPeerRoutes(a, input.applyUuid)));
  } catch (err) {
    failAll = failureMessage(err);
  }
  state = 'recording';
  const outcome = await dbActivities.recordPeerRouteResults(input.applyUuid, results, failAll);
  state = 'done';
  return outcome;
}
