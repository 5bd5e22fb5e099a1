import { setHandler } from '@temporalio/workflow';
import { stateQuery } from './common';
import { failureMessage } from './failures';
import { deploySite, siteActivities as acts, type SiteDeployState } from './static-site';

export interface SiteProvisionInput {
  workspaceUuid: string;
  siteUuid: string;
  /** The first deployment, when the site was created with a content source. */
  deploymentUuid: string | null;
}

/** pending (content bucket and routing provisioned) -> assigned, then the first deployment if any. */
export async function staticSiteProvision(input: SiteProvisionInput): Promise<string> {
  let state: SiteDeployState | 'gone' = 'pending';
  setHandler(stateQuery, () => state);
  try {
    if (!(await acts.provisionSiteStorage(input.siteUuid))) return 'gone';
  } catch (err) {
    await acts.failSite(input.siteUuid, failureMessage(err));
    state = 'failed';
    return state;
  }
  await acts.transition({ table: 'static_sites', uuid: input.siteUuid, from: ['pending'], to: 'assigned' });
  state = 'assigned';
  if (input.deploymentUuid) {
    return deploySite(
      { workspaceUuid: input.workspaceUuid, siteUuid: input.siteUuid, deploymentUuid: input.deploymentUuid },
      (s) => {
        state = s;
      },
    );
  }
  return state;
}
