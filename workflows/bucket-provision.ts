import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stateQuery } from './common';
import { quickDriverCall } from './activity-options';
import { failureMessage } from './failures';

const { provisionBucket, transition, failBucket } = proxyActivities<Activities>(quickDriverCall);

export interface BucketProvisionInput {
  bucketUuid: string;
}

/** Where bucketProvision is, as its `state` query answers. */
export type BucketProvisionState = 'provisioning' | 'gone' | 'failed' | 'active';

/** pending -> active once the bucket exists on the object store with its key; failed if that cannot be done. */
export async function bucketProvision(input: BucketProvisionInput): Promise<string> {
  let state: BucketProvisionState = 'provisioning';
  setHandler(stateQuery, () => state);
  try {
    if (!(await provisionBucket(input.bucketUuid))) {
      state = 'gone';
      return state;
    }
  } catch (err) {
    await failBucket(input.bucketUuid, failureMessage(err));
    state = 'failed';
    return state;
  }
  await transition({ table: 'buckets', uuid: input.bucketUuid, from: ['pending'], to: 'active' });
  state = 'active';
  return state;
}
