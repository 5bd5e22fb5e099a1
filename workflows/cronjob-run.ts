import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stateQuery } from './common';
import { singleRun } from './activity-options';

const { runCronJob } = proxyActivities<Activities>(singleRun);

/** Where cronjobRun is, as its `state` query answers. */
export type CronjobRunState = 'running' | 'skipped' | 'succeeded' | 'failed';

/** One run of a cron job, started by its Temporal Schedule; the log goes to the job's log stream. */
export async function cronjobRun(input: { cronjobUuid: string }): Promise<number | null> {
  let state: CronjobRunState = 'running';
  setHandler(stateQuery, () => state);
  const exitCode = await runCronJob(input.cronjobUuid);
  state = exitCode === null ? 'skipped' : exitCode === 0 ? 'succeeded' : 'failed';
  return exitCode;
}
