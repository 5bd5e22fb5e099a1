import { proxyActivities, uuid4 } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { EventType } from '../domain/events';
import { eventEmit } from './activity-options';

const { emitEvent } = proxyActivities<Activities>(eventEmit);

/** Emits a platform event from workflow code (the id is deterministic, so replays agree). */
export async function emit(
  workspaceUuid: string,
  type: EventType,
  appUuid: string | null,
  data: Record<string, unknown>,
): Promise<string> {
  const envelope = await emitEvent({ eventId: uuid4(), workspaceUuid, type, appUuid, data });
  return envelope.id;
}
