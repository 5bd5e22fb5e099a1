import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities, StorageCleanupInput } from '../activities';
import { stateQuery } from './common';
import { cleanup } from './activity-options';

const { cleanupStorage } = proxyActivities<Activities>(cleanup);

/** After a bucket or static site is deleted: revoke its key or route and remove its data from the object store. */
export async function storageCleanup(input: StorageCleanupInput): Promise<void> {
  let state = 'cleaning';
  setHandler(stateQuery, () => state);
  await cleanupStorage(input);
  state = 'done';
}
