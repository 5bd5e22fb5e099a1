import { getExternalWorkflowHandle, patched, setHandler } from '@temporalio/workflow';
import { appWorkflowId } from '../domain/apps';
import { acts } from './app-steps';
import { stateQuery } from './common';

export interface AppDeleteInput {
  appUuid: string;
}

/** Where appDelete is, as its `state` query answers. */
export type AppDeleteState = 'stopping-workflow' | 'tearing-down' | 'removing' | 'deleted';

/**
 * Deletes an app (`app-delete/<uuid>`): ends its workflow, destroys its preview
 * environments, removes its add-ons, cron jobs and VPC attachments, its workload from the
 * data plane, then its rows, releasing its capacity and external ports.
 */
export async function appDelete(input: AppDeleteInput): Promise<void> {
  let state: AppDeleteState = 'stopping-workflow';
  setHandler(stateQuery, () => state);
  try {
    await getExternalWorkflowHandle(appWorkflowId(input.appUuid)).cancel();
  } catch {
    // no app workflow is running
  }
  state = 'tearing-down';
  if (patched('app-delete-previews')) {
    // Its preview environments go first, each through its own destroy path (their apps,
    // workloads and workflows): the row cascade alone would leave the preview apps behind.
    await acts.destroyAppPreviews(input.appUuid);
  }
  if (patched('app-delete-addons-and-vpcs')) {
    // Its add-ons and cron jobs (clusters, schedules) and its VPC attachments go first:
    // the row cascade alone would leave them behind in the data plane.
    await acts.deleteAppAddons(input.appUuid);
    await acts.detachDeletedWorkload(input.appUuid);
  }
  await acts.deleteAppWorkload(input.appUuid);
  state = 'removing';
  await acts.removeApp(input.appUuid);
  state = 'deleted';
}
