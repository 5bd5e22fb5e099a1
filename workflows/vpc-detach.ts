import { setHandler } from '@temporalio/workflow';
import { stateQuery } from './common';
import { dbActivities, driverActivities } from './vpc-common';

export interface VpcDetachInput {
  attachmentUuid: string;
}

/** Where vpcDetach is, as its `state` query answers. */
export type VpcDetachState = 'detaching' | 'restarting' | 'detached';

/** Detaches a workload: unplugs it, restarts it once off the VPC, removes the attachment. */
export async function vpcDetach(input: VpcDetachInput): Promise<string> {
  let state: VpcDetachState = 'detaching';
  setHandler(stateQuery, () => state);
  await driverActivities.detachWorkloadNetwork(input.attachmentUuid);
  state = 'restarting';
  await driverActivities.restartAttachedWorkload(input.attachmentUuid, 'detach');
  await dbActivities.deleteAttachmentRecord(input.attachmentUuid);
  state = 'detached';
  return state;
}
