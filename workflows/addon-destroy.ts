import { proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stateQuery } from './common';
import { patientDriverCall } from './activity-options';

const { destroyAddonData, refreshAddonStatus } = proxyActivities<Activities>(patientDriverCall);

export interface AddonDestroyInput {
  addonUuid: string;
  mode: 'reset' | 'delete';
}

/** Where addonDestroy is, as its `state` query answers. */
export type AddonDestroyState = 'reset' | 'resetting' | 'deleting' | 'creating' | 'deleted';

/**
 * Destructive (ADD-11): `reset` drops every piece of data of the database (its backups
 * too) and brings it back empty; `delete` removes the cluster and the add-on. The data
 * does not come back.
 */
export async function addonDestroy(input: AddonDestroyInput): Promise<void> {
  let state: AddonDestroyState = input.mode === 'reset' ? 'resetting' : 'deleting';
  setHandler(stateQuery, () => state);
  await destroyAddonData(input);
  if (input.mode === 'reset') {
    state = 'creating';
    for (let delay = 1; !(await refreshAddonStatus(input.addonUuid)).ready; delay = Math.min(delay * 2, 30))
      await sleep(`${delay} seconds`);
  }
  state = input.mode === 'reset' ? 'reset' : 'deleted';
}
