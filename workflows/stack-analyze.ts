import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { AnalyzeInput, AnalyzeResult } from '../domain/stacks';
import { stateQuery } from './common';
import { refusing, sourceRead } from './activity-options';

const { analyzeStackSource } = proxyActivities<Activities>(refusing(sourceRead, 'GitError', 'ComposeError'));

/** Where stackAnalyze is, as its `state` query answers. */
export type StackAnalyzeState = 'analyzing' | 'analyzed';

/** POST /stacks/analyze: clone and read the compose file on a worker; creates nothing. */
export async function stackAnalyze(input: AnalyzeInput): Promise<AnalyzeResult> {
  let state: StackAnalyzeState = 'analyzing';
  setHandler(stateQuery, () => state);
  const result = await analyzeStackSource(input);
  state = 'analyzed';
  return result;
}
