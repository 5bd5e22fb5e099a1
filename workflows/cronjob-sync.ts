import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stateQuery } from './common';
import { quickDb } from './activity-options';

const { syncCronSchedule } = proxyActivities<Activities>(quickDb);

/**
 * Creates, updates or deletes a cron job's Temporal Schedule (`cronjob/<uuid>`, visible in
 * the Temporal UI under Schedules) after the job is written; a job being deleted loses its
 * schedule, then its row.
 */
export async function cronjobSync(input: { cronjobUuid: string }): Promise<string> {
  let state: 'syncing' | 'created' | 'updated' | 'deleted' = 'syncing';
  setHandler(stateQuery, () => state);
  state = await syncCronSchedule(input.cronjobUuid);
  return state;
}
