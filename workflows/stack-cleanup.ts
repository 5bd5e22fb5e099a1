import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stateQuery } from './common';

const { removeStackServices } = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 20 },
});

export interface StackCleanupInput {
  itemUuids: string[];
}

/** After DELETE /stacks/{uuid}: the stack's services are removed from the data plane. */
export async function stackCleanup(input: StackCleanupInput): Promise<void> {
  let state = 'removing';
  setHandler(stateQuery, () => state);
  await removeStackServices(input.itemUuids);
  state = 'done';
}
