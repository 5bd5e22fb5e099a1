import { setHandler } from '@temporalio/workflow';
import { stateQuery } from './common';
import { dbActivities, driverActivities } from './vpc-common';

export interface SiteConnectionDeleteInput {
  connectionUuid: string;
}

/** Where siteConnectionDelete is, as its `state` query answers. */
export type SiteConnectionDeleteState = 'disconnecting' | 'releasing' | 'deleted';

/** Tears down the tunnels, then releases the public IPv4 and ends the billing. */
export async function siteConnectionDelete(input: SiteConnectionDeleteInput): Promise<string> {
  let state: SiteConnectionDeleteState = 'disconnecting';
  setHandler(stateQuery, () => state);
  await driverActivities.deleteSiteTunnel(input.connectionUuid);
  state = 'releasing';
  await dbActivities.releaseSiteConnection(input.connectionUuid);
  state = 'deleted';
  return state;
}
