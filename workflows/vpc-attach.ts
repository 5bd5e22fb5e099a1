import { setHandler } from '@temporalio/workflow';
import { stateQuery } from './common';
import { dbActivities, driverActivities } from './vpc-common';
import { failureMessage } from './failures';

export interface VpcAttachInput {
  attachmentUuid: string;
}

/** Where vpcAttach is, as its `state` query answers. */
export type VpcAttachState = 'attaching' | 'restarting' | 'compensating' | 'failed' | 'attached';

/**
 * Attaches a workload to a subnet: plugs it in through the driver, restarts it once so it
 * comes up on the VPC, and moves the attachment to attached (or failed, unplugged again).
 */
export async function vpcAttach(input: VpcAttachInput): Promise<string> {
  let state: VpcAttachState = 'attaching';
  setHandler(stateQuery, () => state);
  try {
    await driverActivities.attachWorkloadNetwork(input.attachmentUuid);
    state = 'restarting';
    await driverActivities.restartAttachedWorkload(input.attachmentUuid, 'attach');
  } catch (err) {
    state = 'compensating';
    const reason = failureMessage(err);
    await driverActivities.detachWorkloadNetwork(input.attachmentUuid).catch(() => undefined);
    await dbActivities.failAttachment(input.attachmentUuid, reason);
    state = 'failed';
    return state;
  }
  await dbActivities.transition({
    table: 'vpc_attachments',
    uuid: input.attachmentUuid,
    from: ['attaching'],
    to: 'attached',
  });
  state = 'attached';
  return state;
}
