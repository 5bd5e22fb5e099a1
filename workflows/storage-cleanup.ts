import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities, StorageCleanupInput } from '../activities';
import { stateQuery } from './common';

const { cleanupStorage } = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 20 },
});

/** After a bucket or static site is deleted: revoke its key or route and remove its data from the object store. */
export async function storageCleanup(input: StorageCleanupInput): Promise<void> {
  let state = 'cleaning';
  setHandler(stateQuery, () => state);
  await cleanupStorage(input);
  state = 'done';
}
