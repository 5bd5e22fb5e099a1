import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { AnalyzeInput, AnalyzeResult } from '../domain/stacks';
import { stateQuery } from './common';

const { analyzeStackSource } = proxyActivities<Activities>({
  startToCloseTimeout: '3 minutes',
  retry: { initialInterval: '1 second', maximumAttempts: 2, nonRetryableErrorTypes: ['GitError', 'ComposeError'] },
});

/** POST /stacks/analyze: clone and read the compose file on a worker; creates nothing. */
export async function stackAnalyze(input: AnalyzeInput): Promise<AnalyzeResult> {
  let state = 'analyzing';
  setHandler(stateQuery, () => state);
  const result = await analyzeStackSource(input);
  state = 'analyzed';
  return result;
}
