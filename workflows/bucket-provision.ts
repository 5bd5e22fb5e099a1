import { ApplicationFailure, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stateQuery } from './common';
import { quickDriverCall } from './activity-options';

const { provisionBucket, transition, failBucket } = proxyActivities<Activities>(quickDriverCall);

export interface BucketProvisionInput {
  bucketUuid: string;
}

function reason(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof ApplicationFailure) return cause.message;
  return err instanceof Error ? err.message : String(err);
}

/** pending -> active once the bucket exists on the object store with its key; failed if that cannot be done. */
export async function bucketProvision(input: BucketProvisionInput): Promise<string> {
  let state = 'provisioning';
  setHandler(stateQuery, () => state);
  try {
    if (!(await provisionBucket(input.bucketUuid))) {
      state = 'gone';
      return state;
    }
  } catch (err) {
    await failBucket(input.bucketUuid, reason(err));
    state = 'failed';
    return state;
  }
  await transition({ table: 'buckets', uuid: input.bucketUuid, from: ['pending'], to: 'active' });
  state = 'active';
  return state;
}
