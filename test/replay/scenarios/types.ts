import type { temporal } from '@temporalio/proto';
import type { TestStack } from '../../support/stack';

export type History = temporal.api.history.v1.IHistory;

/**
 * One recorded history: `record` drives the operation on a real Temporal server (the
 * suite's dev server through `stack`, or a time-skipping test server for workflows whose
 * timers run for hours) and returns the finished workflow's history.
 */
export interface ReplayScenario {
  /** File name under test/replay/histories (without .json). */
  name: string;
  record(stack: TestStack): Promise<History>;
}
