import type { EventEnvelope, EventType } from '../domain/events';
import { one } from '../entities/sql';
import type { ActivityDeps } from './deps';

export interface EmitEventInput {
  /** Deterministic id chosen by the workflow (uuid4() there), so a retried activity emits once. */
  eventId: string;
  workspaceUuid: string;
  type: EventType;
  /** data.app_id of app-scoped events; null for quota_alert. */
  appUuid: string | null;
  data: Record<string, unknown>;
}

export function createEventActivities({ dataSource }: Pick<ActivityDeps, 'dataSource'>) {
  return {
    /**
     * The one path every workflow emits platform events through: persists the event once
     * under its stable id with the envelope {id, type, timestamp, data}, then fans it out.
     */
    async emitEvent(input: EmitEventInput): Promise<EventEnvelope> {
      const envelope: EventEnvelope = {
        id: input.eventId,
        type: input.type,
        timestamp: new Date().toISOString(),
        data: input.appUuid ? { app_id: input.appUuid, ...input.data } : input.data,
      };
      await dataSource.query(
        `INSERT INTO events (uuid, workspace_uuid, type, app_uuid, payload) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (uuid) DO NOTHING`,
        [input.eventId, input.workspaceUuid, input.type, input.appUuid, JSON.stringify(envelope)]);
      const stored = await one<{ payload: EventEnvelope }>(dataSource, `SELECT payload FROM events WHERE uuid = $1`, [input.eventId]);
      return stored!.payload;
    },
  };
}
