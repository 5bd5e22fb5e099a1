import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stateQuery } from './common';
import { sweep } from './activity-options';

const { sweepAddonHealth } = proxyActivities<Activities>(sweep);

/** Where addonHealthSweep is, as its `state` query answers. */
export type AddonHealthSweepState = 'sweeping' | 'swept';

/**
 * Started every minute by the `addon-health/<task queue>` Temporal Schedule: records the
 * live status the driver reports for every provisioned add-on and service (ADD-03/04).
 */
export async function addonHealthSweep(): Promise<number> {
  let state: AddonHealthSweepState = 'sweeping';
  setHandler(stateQuery, () => state);
  const changed = await sweepAddonHealth();
  state = 'swept';
  return changed;
}
