import { proxyActivities, uuid4 } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { EventType } from '../domain/events';

const { emitEvent } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** Emits a platform event from workflow code (the id is deterministic, so replays agree). */
export async function emit(workspaceUuid: string, type: EventType, appUuid: string | null, data: Record<string, unknown>): Promise<string> {
  const envelope = await emitEvent({ eventId: uuid4(), workspaceUuid, type, appUuid, data });
  return envelope.id;
}
