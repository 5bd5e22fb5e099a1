import { randomUUID } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { eventData, InvalidEventError, type EventEnvelope, type EventResource, type EventType } from '../domain/events';
import { one, rows } from '../entities/sql';
import { startWebhookDelivery } from '../platform/webhook-starts';
import type { ActivityDeps } from './deps';
import { pruneDeliveries } from './webhooks';

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
 * Webhooks an event reaches (Events, Scoping): enabled; subscribed to the type (no
 * types = all); and in scope: workspace-wide (no app_uuids), or the app is listed, or
 * the app is a preview environment whose parent is listed and include_review_apps is
 * on. quota_alert is workspace-level and ignores app scoping.
 */
const MATCHING_WEBHOOKS = `
  SELECT w.uuid FROM webhooks w
   WHERE w.workspace_uuid = $1 AND w.enabled
     AND (cardinality(w.events) = 0 OR $2 = ANY(w.events))
     AND ($2 = 'quota_alert' OR cardinality(w.app_uuids) = 0 OR $3::uuid = ANY(w.app_uuids)
          OR (w.include_review_apps AND $4::uuid IS NOT NULL AND $4::uuid = ANY(w.app_uuids)))
   ORDER BY w.created_at, w.uuid`;

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
     * transaction, one pending delivery per matching webhook (the exact body each will
     * POST); then starts one delivery workflow per delivery, `webhook-delivery/<webhook>/<event>`.
     * Idempotent: a retry finds the event and its deliveries and starts only what is not
     * running or finished.
     */
    async emitEvent(input: EmitEventInput): Promise<EventEnvelope> {
      const stored = await dataSource.transaction(async (m) => {
        const existing = await one<{ payload: EventEnvelope }>(m, `SELECT payload FROM events WHERE uuid = $1`, [
          input.eventId,
        ]);
        if (existing) return existing.payload;
        const app = input.appUuid
          ? await one<{ preview_parent_uuid: string | null; resource_name: string | null; labels: string[] | null }>(
              m,
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
        const envelope: EventEnvelope = {
          id: input.eventId,
          type: input.type,
          timestamp: new Date().toISOString(),
          data,
        };
        const body = JSON.stringify(envelope);
        const inserted = await rows(
          m,
          `INSERT INTO events (uuid, workspace_uuid, type, app_uuid, payload) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (uuid) DO NOTHING RETURNING uuid`,
          [input.eventId, input.workspaceUuid, input.type, input.appUuid, body],
        );
        if (inserted.length === 0) return envelope;
        const webhooks = await rows<{ uuid: string }>(m, MATCHING_WEBHOOKS, [
          input.workspaceUuid,
          input.type,
          input.appUuid,
          app?.preview_parent_uuid ?? null,
        ]);
        for (const w of webhooks) {
          await m.query(
            `INSERT INTO webhook_deliveries (uuid, webhook_uuid, event_id, event_type, body) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (webhook_uuid, event_id) DO NOTHING`,
            [randomUUID(), w.uuid, input.eventId, input.type, body],
          );
          await pruneDeliveries(m, w.uuid);
        }
        return envelope;
      });
      const deliveries = await rows<{ webhook_uuid: string }>(
        dataSource,
        `SELECT webhook_uuid FROM webhook_deliveries WHERE event_id = $1 AND status = 'pending' ORDER BY seq`,
        [input.eventId],
      );
      const taskQueue = currentTaskQueue(config.taskQueue);
      await Promise.all(
        deliveries.map((d) =>
          startWebhookDelivery(temporal, taskQueue, input.workspaceUuid, {
            webhookUuid: d.webhook_uuid,
            eventId: input.eventId,
          }),
        ),
      );
      return stored;
    },
  };
}
