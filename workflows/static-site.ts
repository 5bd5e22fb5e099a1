import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { emit } from './events';
import { longBuild, quickDriverCall, refusing } from './activity-options';
import { failureMessage } from './failures';
import type { SiteState } from '../domain/static-sites';

const acts = proxyActivities<Activities>(quickDriverCall);
const publish = proxyActivities<Activities>(refusing(longBuild, 'GitError', 'SiteContentError'));

export interface SiteDeployInput {
  workspaceUuid: string;
  siteUuid: string;
  deploymentUuid: string;
}

/**
 * One static-site deployment: deploying -> running | failed, with deploy_started and
 * deploy_ended (data.app_id = the site's uuid; data.message = why it failed, else null).
 */
/** Where a site's deployment is, as the deploying workflow's `state` query answers. */
export type SiteDeployState =
  'queued' | 'skipped' | Extract<SiteState, 'pending' | 'assigned' | 'deploying' | 'running' | 'failed'>;

export async function deploySite(
  input: SiteDeployInput,
  setState: (s: SiteDeployState) => void,
): Promise<SiteDeployState> {
  if (!(await acts.startSiteDeployment(input.siteUuid, input.deploymentUuid))) return 'skipped';
  setState('deploying');
  await emit(input.workspaceUuid, 'deploy_started', input.siteUuid, {
    deployment_id: input.deploymentUuid,
    commit_sha: null,
  });
  try {
    const result = await publish.publishSiteContent(input.siteUuid, input.deploymentUuid);
    await acts.finishSiteDeployment(input.siteUuid, input.deploymentUuid, 'completed', null);
    await emit(input.workspaceUuid, 'deploy_ended', input.siteUuid, {
      deployment_id: input.deploymentUuid,
      commit_sha: result.commitSha,
      message: null,
    });
    setState('running');
    return 'running';
  } catch (err) {
    const message = failureMessage(err);
    await acts.finishSiteDeployment(input.siteUuid, input.deploymentUuid, 'failed', message);
    await emit(input.workspaceUuid, 'deploy_ended', input.siteUuid, {
      deployment_id: input.deploymentUuid,
      commit_sha: null,
      message,
    });
    setState('failed');
    return 'failed';
  }
}

export { acts as siteActivities };
