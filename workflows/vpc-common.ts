import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { driverCall, quickDb } from './activity-options';

/** Activities that call the network driver: retried with backoff, a bounded number of times. */
export const driverActivities = proxyActivities<Activities>(driverCall);

/** Database-only activities: retried until they succeed. */
export const dbActivities = proxyActivities<Activities>(quickDb);

/** Why an activity failed, for the resource's failure_reason. */
export function reasonOf(err: unknown): string {
  if (err instanceof ActivityFailure) {
    const cause = err.cause;
    if (cause instanceof ApplicationFailure || cause instanceof Error) return cause.message;
  }
  return err instanceof Error ? err.message : String(err);
}
