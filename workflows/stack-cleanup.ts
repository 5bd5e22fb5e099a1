import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stateQuery } from './common';
import { cleanup } from './activity-options';

const { removeStackServices } = proxyActivities<Activities>(cleanup);

export interface StackCleanupInput {
  itemUuids: string[];
}

/** Where stackCleanup is, as its `state` query answers. */
export type StackCleanupState = 'removing' | 'done';

/** After DELETE /stacks/{uuid}: the stack's services are removed from the data plane. */
export async function stackCleanup(input: StackCleanupInput): Promise<void> {
  let state: StackCleanupState = 'removing';
  setHandler(stateQuery, () => state);
  await removeStackServices(input.itemUuids);
  state = 'done';
}
