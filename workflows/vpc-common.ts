import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

/** Activities that call the network driver: retried with backoff, a bounded number of times. */
export const driverActivities = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 6 },
});

/** Database-only activities: retried until they succeed. */
export const dbActivities = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** Why an activity failed, for the resource's failure_reason. */
export function reasonOf(err: unknown): string {
  if (err instanceof ActivityFailure) {
    const cause = err.cause;
    if (cause instanceof ApplicationFailure || cause instanceof Error) return cause.message;
  }
  return err instanceof Error ? err.message : String(err);
}
