import { setHandler } from '@temporalio/workflow';
import { stateQuery } from './common';
import { deploySite, type SiteDeployInput, type SiteDeployState } from './static-site';

/** PUT /static_sites/{uuid}/deployment: publish the content source again. */
export async function staticSiteDeploy(input: SiteDeployInput): Promise<SiteDeployState> {
  let state: SiteDeployState = 'queued';
  setHandler(stateQuery, () => state);
  return deploySite(input, (s) => {
    state = s;
  });
}
