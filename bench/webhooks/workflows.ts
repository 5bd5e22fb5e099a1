import { proxyActivities } from '@temporalio/workflow';
import { emit } from '../../workflows/events';

/** The bench worker's workflows: Berth's own (the delivery workflow), plus the two the bench drives. */
export * from '../../workflows';

const { benchNoop } = proxyActivities<{ benchNoop(): Promise<void> }>({ startToCloseTimeout: '1 minute' });

/** Baseline: a workflow that runs one no-op activity. */
export async function benchOneNoopActivity(): Promise<void> {
  await benchNoop();
}

/** A workflow that emits one event through the one emit path (emitEvent -> fan-out -> delivery workflows). */
export async function benchEmitEvent(workspaceUuid: string): Promise<string> {
  return emit(workspaceUuid, 'quota_alert', null, { bench: true });
}
