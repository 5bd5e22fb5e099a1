import { setHandler } from '@temporalio/workflow';
import { stateQuery } from './common';
import { dbActivities, driverActivities } from './vpc-common';
import { failureMessage } from './failures';

export interface SiteConnectionCreateInput {
  connectionUuid: string;
}

/** Where siteConnectionCreate is, as its `state` query answers. */
export type SiteConnectionCreateState = 'connecting' | 'failed' | 'active';

/** Brings up a site-to-site connection's IPsec tunnels: pending -> active (or failed). */
export async function siteConnectionCreate(input: SiteConnectionCreateInput): Promise<string> {
  let state: SiteConnectionCreateState = 'connecting';
  setHandler(stateQuery, () => state);
  try {
    await driverActivities.createSiteTunnel(input.connectionUuid);
  } catch (err) {
    await driverActivities.deleteSiteTunnel(input.connectionUuid).catch(() => undefined);
    await dbActivities.failVpcComponent('vpc_site_connections', input.connectionUuid, failureMessage(err));
    state = 'failed';
    return state;
  }
  await dbActivities.transition({
    table: 'vpc_site_connections',
    uuid: input.connectionUuid,
    from: ['pending'],
    to: 'active',
  });
  state = 'active';
  return state;
}
