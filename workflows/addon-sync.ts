import { proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stateQuery } from './common';
import { quickDb } from './activity-options';

const { syncAddonSettings, ensureAddonSubPaths, refreshAddonStatus } = proxyActivities<Activities>(quickDb);

export interface AddonSyncInput {
  addonUuid: string;
  /** Also create sub_path directories of mounts (mount_app). */
  subPaths?: boolean;
}

/** Where addonSync is, as its `state` query answers. */
export type AddonSyncState = 'applying' | 'applied';

/**
 * Brings the cluster in line with an accepted settings change (BKP-01/02): running or
 * stopped, public access and backups; `backup_active` follows `backup_enabled` once the cluster runs it.
 * Started per change (`addon-sync/<uuid>/<generation>`); concurrent runs converge.
 */
export async function addonSync(input: AddonSyncInput): Promise<void> {
  let state: AddonSyncState = 'applying';
  setHandler(stateQuery, () => state);
  if (input.subPaths) await ensureAddonSubPaths(input.addonUuid);
  // Apply until the cluster runs what the row asks (a change or a concurrent run may
  // intervene); a started add-on is `creating` until the cluster reports its live status.
  for (let delay = 1; ; delay = Math.min(delay * 2, 30)) {
    const inLine = await syncAddonSettings(input.addonUuid);
    if (inLine && (await refreshAddonStatus(input.addonUuid)).ready) break;
    await sleep(`${delay} seconds`);
  }
  state = 'applied';
}
