import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities, StorageCleanupInput } from '../activities';
import { stateQuery } from './common';
import { cleanup } from './activity-options';

const { cleanupStorage } = proxyActivities<Activities>(cleanup);

/** Where storageCleanup is, as its `state` query answers. */
export type StorageCleanupState = 'cleaning' | 'done';

/** After a bucket or static site is deleted: revoke its key or route and remove its data from the object store. */
export async function storageCleanup(input: StorageCleanupInput): Promise<void> {
  let state: StorageCleanupState = 'cleaning';
  setHandler(stateQuery, () => state);
  await cleanupStorage(input);
  state = 'done';
}
