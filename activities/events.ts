import { ApplicationFailure, Context } from '@temporalio/activity';
import { eventData, InvalidEventError, type EventEnvelope, type EventResource, type EventType } from '../domain/events';
import { one, rows } from '../entities/sql';
import { startWebhookDelivery } from '../platform/webhook-starts';
import type { ActivityDeps } from './deps';

export interface EmitEventInput {
  /** Deterministic id chosen by the workflow (uuid4() there), so a retried activity emits once. */
  eventId: string;
  workspaceUuid: string;
  type: EventType;
  /** data.app_id of app-scoped events (an app or static site uuid); null for quota_alert. */
  appUuid: string | null;
  data: Record<string, unknown>;
}

/**
 * In one statement (atomic without a transaction): the event under its stable id and, when
 * it is new, one pending delivery per webhook it reaches (Events, Scoping): enabled;
 * subscribed to the type (no types = all); and in scope: workspace-wide (no app_uuids), or
 * the app is listed, or the app is a preview environment whose parent is listed and
 * include_review_apps is on. quota_alert is workspace-level and ignores app scoping.
 * Answers whether the event was new and the webhooks of the deliveries inserted.
 * $1 event id, $2 workspace, $3 type, $4 app, $5 envelope, $6 the app's preview parent.
 */
const INSERT_EVENT_AND_DELIVERIES = `
  WITH event AS (
    INSERT INTO events (uuid, workspace_uuid, type, app_uuid, payload) VALUES ($1, $2, $3::text, $4::uuid, $5::text::jsonb)
    ON CONFLICT (uuid) DO NOTHING RETURNING uuid
  ), deliveries AS (
    INSERT INTO webhook_deliveries (uuid, webhook_uuid, event_id, event_type, body)
    SELECT gen_random_uuid(), w.uuid, $1, $3, $5::text FROM webhooks w
     WHERE EXISTS (SELECT 1 FROM event) AND w.workspace_uuid = $2 AND w.enabled
       AND (cardinality(w.events) = 0 OR $3 = ANY(w.events))
       AND ($3 = 'quota_alert' OR cardinality(w.app_uuids) = 0 OR $4::uuid = ANY(w.app_uuids)
            OR (w.include_review_apps AND $6::uuid IS NOT NULL AND $6::uuid = ANY(w.app_uuids)))
     ORDER BY w.created_at, w.uuid
    ON CONFLICT (webhook_uuid, event_id) DO NOTHING RETURNING webhook_uuid
  )
  SELECT EXISTS (SELECT 1 FROM event) AS inserted, ARRAY(SELECT webhook_uuid::text FROM deliveries) AS webhooks`;

function currentTaskQueue(fallback: string): string {
  try {
    return Context.current().info.taskQueue;
  } catch {
    return fallback;
  }
}

export function createEventActivities({
  dataSource,
  temporal,
  config,
}: Pick<ActivityDeps, 'dataSource' | 'temporal' | 'config'>) {
  return {
    /**
     * The one path every workflow emits platform events through. Persists the event once
     * under its stable id with the envelope {id, type, timestamp, data} and, in the same
     * statement, one pending delivery per matching webhook (the exact body each will
     * POST); then starts one delivery workflow per delivery, `webhook-delivery/<webhook>/<event>`.
     * Idempotent: a retry finds the event and its deliveries and starts only what is not
     * running or finished.
     */
    async emitEvent(input: EmitEventInput): Promise<EventEnvelope> {
      const app = input.appUuid
        ? await one<{ preview_parent_uuid: string | null; resource_name: string | null; labels: string[] | null }>(
            dataSource,
            `SELECT a.preview_parent_uuid, r.name AS resource_name, r.labels FROM apps a LEFT JOIN compute_resources r ON r.uuid = a.resource_uuid
            WHERE a.uuid = $1 AND a.workspace_uuid = $2`,
            [input.appUuid, input.workspaceUuid],
          )
        : undefined;
      const resource: EventResource | null = app?.resource_name
        ? { name: app.resource_name, labels: app.labels ?? [] }
        : null;
      let data: Record<string, unknown>;
      try {
        data = eventData(input.type, input.appUuid, input.data, resource);
      } catch (err) {
        if (err instanceof InvalidEventError) throw ApplicationFailure.nonRetryable(err.message, 'InvalidEvent');
        throw err;
      }
      let stored: EventEnvelope = { id: input.eventId, type: input.type, timestamp: new Date().toISOString(), data };
      const [written] = await rows<{ inserted: boolean; webhooks: string[] }>(dataSource, INSERT_EVENT_AND_DELIVERIES, [
        input.eventId,
        input.workspaceUuid,
        input.type,
        input.appUuid,
        JSON.stringify(stored),
        app?.preview_parent_uuid ?? null,
      ]);
      let webhooks = written!.webhooks;
      if (!written!.inserted) {
        // A retry: the event was stored before; start whatever of its deliveries is still pending.
        stored = (await one<{ payload: EventEnvelope }>(dataSource, `SELECT payload FROM events WHERE uuid = $1`, [
          input.eventId,
        ]))!.payload;
        webhooks = (
          await rows<{ webhook_uuid: string }>(
            dataSource,
            `SELECT webhook_uuid FROM webhook_deliveries WHERE event_id = $1 AND status = 'pending' ORDER BY seq`,
            [input.eventId],
          )
        ).map((d) => d.webhook_uuid);
      }
      const taskQueue = currentTaskQueue(config.taskQueue);
      await Promise.all(
        webhooks.map((webhookUuid) =>
          startWebhookDelivery(temporal, taskQueue, input.workspaceUuid, {
            webhookUuid,
            eventId: input.eventId,
          }),
        ),
      );
      return stored;
    },
  };
}
