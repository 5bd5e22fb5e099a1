import { patched, proxyActivities, proxyLocalActivities, uuid4 } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { EventType } from '../domain/events';
import { eventEmit, localEventEmit } from './activity-options';

/** Workflows that emit from here on run emitEvent as a local activity (one workflow task fewer, no activity task). */
const LOCAL_EMIT_PATCH = 'event-emit-local-activity';

const { emitEvent } = proxyActivities<Activities>(eventEmit);
const local = proxyLocalActivities<Activities>(localEventEmit);

/** Emits a platform event from workflow code (the id is deterministic, so replays agree). */
export async function emit(
  workspaceUuid: string,
  type: EventType,
  appUuid: string | null,
  data: Record<string, unknown>,
): Promise<string> {
  const input = { eventId: uuid4(), workspaceUuid, type, appUuid, data };
  const envelope = patched(LOCAL_EMIT_PATCH) ? await local.emitEvent(input) : await emitEvent(input);
  return envelope.id;
}
