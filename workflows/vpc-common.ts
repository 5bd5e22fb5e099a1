import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { driverCall, quickDb } from './activity-options';

/** Activities that call the network driver: retried with backoff, a bounded number of times. */
export const driverActivities = proxyActivities<Activities>(driverCall);

/** Database-only activities: retried until they succeed. */
export const dbActivities = proxyActivities<Activities>(quickDb);
