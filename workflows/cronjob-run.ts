import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stateQuery } from './common';

const { runCronJob } = proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  retry: { maximumAttempts: 1 },
});

/** One run of a cron job, started by its Temporal Schedule; the log goes to the job's log stream. */
export async function cronjobRun(input: { cronjobUuid: string }): Promise<number | null> {
  let state = 'running';
  setHandler(stateQuery, () => state);
  const exitCode = await runCronJob(input.cronjobUuid);
  state = exitCode === null ? 'skipped' : exitCode === 0 ? 'succeeded' : 'failed';
  return exitCode;
}
