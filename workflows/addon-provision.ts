import { proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stateQuery } from './common';
import { activitiesSizedPerCall, dataInit, quickDb } from './activity-options';
import type { AddonState } from '../domain/addon-states';

/** Database steps are short; creating the cluster (initdb, a first start) gets ten minutes and heartbeats. */
const { transition, provisionAddonCluster, refreshAddonStatus, ensureAddonSubPaths, syncAddonSettings } =
  activitiesSizedPerCall<Activities>((o) => proxyActivities<Activities>(o), quickDb, {
    provisionAddonCluster: dataInit,
  });

export interface AddonProvisionInput {
  addonUuid: string;
  /** A storage add-on (or service) whose sub_path directories are created if missing. */
  storage?: boolean;
}

/**
 * Provisions an add-on, a service or a read replica (ADD-03): pending -> processing
 * (cluster requested) -> creating (until the driver reports ready) -> the live status
 * (healthy, bound, running or an unhealthy value), once sub paths, backups and public
 * access are applied.
 */
export async function addonProvision(input: AddonProvisionInput): Promise<string> {
  let state: AddonState = 'pending';
  setHandler(stateQuery, () => state);
  await transition({ table: 'addons', uuid: input.addonUuid, from: ['pending'], to: 'processing' });
  state = 'processing';
  await provisionAddonCluster(input.addonUuid);
  await transition({ table: 'addons', uuid: input.addonUuid, from: ['processing'], to: 'creating' });
  state = 'creating';
  if (input.storage) await ensureAddonSubPaths(input.addonUuid);
  while (!(await syncAddonSettings(input.addonUuid))) {
    /* the setting changed while applying: apply again */
  }
  // The live status comes last: once it shows, sub paths, backups and public access are in place.
  let delay = 1;
  for (;;) {
    const s = await refreshAddonStatus(input.addonUuid);
    if (s.ready) {
      state = s.status;
      break;
    }
    await sleep(`${delay} seconds`);
    delay = Math.min(delay * 2, 30);
  }
  return state;
}
