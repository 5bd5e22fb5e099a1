import { proxyActivities, setHandler, sleep, uuid4 } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { UNHEALTHY_STATES } from '../domain/addon-states';
import type { RestoreChoice } from '../domain/data';
import { stateQuery } from './common';
import { patientDriverCall } from './activity-options';

const { transition, createRestoreTarget, restoreAddonCluster, refreshAddonStatus, syncAddonSettings } =
  proxyActivities<Activities>(patientDriverCall);

export interface AddonRestoreInput {
  addonUuid: string;
  from: RestoreChoice;
  toNewCluster: boolean;
}

export interface AddonRestoreResult {
  restored: string;
  /** The add-on (or service) holding the restored data: the same one, or the new cluster's. */
  targetUuid: string;
}

/** Where addonRestore is, as its `state` query answers. */
export type AddonRestoreState = 'starting' | 'creating_cluster' | 'restoring' | 'starting_database' | 'restored';

/**
 * Restores a postgres backup (BKP-04..07): by name, to a point in time, or the latest.
 * In place the database is replaced (state `restoring`, then the live status); with
 * toNewCluster a new add-on beside the old one receives the data and the old one is not
 * touched. One restore per database at a time: the id is `addon-restore/<uuid>`.
 */
export async function addonRestore(input: AddonRestoreInput): Promise<AddonRestoreResult> {
  let state: AddonRestoreState = 'starting';
  setHandler(stateQuery, () => state);
  let targetUuid = input.addonUuid;
  if (input.toNewCluster) {
    targetUuid = uuid4();
    state = 'creating_cluster';
    await createRestoreTarget(input.addonUuid, targetUuid);
  } else {
    await transition({
      table: 'addons',
      uuid: input.addonUuid,
      from: ['healthy', 'running', ...UNHEALTHY_STATES],
      to: 'restoring',
    });
  }
  state = 'restoring';
  const restored = await restoreAddonCluster({ addonUuid: input.addonUuid, targetUuid, from: input.from });
  state = 'starting_database';
  if (!input.toNewCluster)
    await transition({ table: 'addons', uuid: input.addonUuid, from: ['restoring'], to: 'creating' });
  for (let delay = 1; !(await refreshAddonStatus(targetUuid)).ready; delay = Math.min(delay * 2, 30))
    await sleep(`${delay} seconds`);
  if (input.toNewCluster) await syncAddonSettings(targetUuid);
  state = 'restored';
  return { restored, targetUuid };
}
