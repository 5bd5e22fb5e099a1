import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
import type { EventEnvelope } from '../../domain/events';
import { WEBHOOK_ATTEMPT_TIMEOUT_MS, webhookDeliveryWorkflowId } from '../../domain/webhooks';
import { columnsOf } from '../../entities/columns';
import { one, rows } from '../../entities/sql';
import { Webhook } from '../../entities/webhook';
import { WebhookDelivery } from '../../entities/webhook-delivery';
import { recordAudit, snapshot } from '../audit';
import { write } from '../commands/audited-write';
import { createWebhook, updateWebhook } from '../commands/webhooks';
import { redeliveryOperation, startWebhookDelivery } from '../../platform/webhook-starts';
import { pageOf, type Page } from '../pagination';
import { notFound, unprocessable } from '../problem';
import { route, type AnyRouteContext } from '../route';
import { createWebhookBody, updateWebhookBody } from '../schemas/webhooks';
import { createdWebhookSchema, deliverySchema, deliveryView, webhookSchema, webhookView } from '../views/webhooks';

const TAG = 'webhooks';
/** How long POST /webhooks/{uuid}/test waits for the ping's one attempt before answering with the delivery as it stands. */
const PING_WAIT_MS = WEBHOOK_ATTEMPT_TIMEOUT_MS + 20_000;

type Ctx = AnyRouteContext;
type CreateBody = yup.InferType<typeof createWebhookBody>;
type UpdateBody = yup.InferType<typeof updateWebhookBody>;

async function findWebhook(ctx: Ctx, uuid: string, db: EntityManager = ctx.deps.dataSource.manager): Promise<Webhook> {
  const row = await db.findOneBy(Webhook, { uuid, workspace_uuid: ctx.caller.workspaceUuid });
  if (!row) throw notFound('webhook');
  return row;
}

async function findDelivery(
  ctx: Ctx,
  webhookUuid: string,
  deliveryUuid: string,
  db: EntityManager = ctx.deps.dataSource.manager,
): Promise<WebhookDelivery> {
  const row = await db.findOneBy(WebhookDelivery, { uuid: deliveryUuid, webhook_uuid: webhookUuid });
  if (!row) throw notFound('delivery');
  return row;
}

export const webhookRoutes = [
  route<{}, Page, unknown>({
    method: 'get',
    path: '/webhooks',
    requires: 'webhooks.manage',
    tag: TAG,
    paginated: true,
    summary: "List the workspace's webhooks, newest first",
    response: yup.array(webhookSchema),
    async handler(ctx) {
      const list = await pageOf(
        ctx,
        ctx.deps.dataSource.manager
          .createQueryBuilder(Webhook, 'w')
          .where('w.workspace_uuid = :workspace', { workspace: ctx.caller.workspaceUuid })
          .orderBy('w.created_at', 'DESC')
          .addOrderBy('w.uuid', 'DESC'),
      );
      return list.map(webhookView);
    },
  }),
  route<{}, {}, CreateBody>({
    method: 'post',
    path: '/webhooks',
    requires: 'webhooks.manage',
    tag: TAG,
    status: 201,
    audit: 'webhook.create',
    summary: 'Create a webhook; the response carries its signing secret, shown only this once',
    body: createWebhookBody,
    response: createdWebhookSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const { webhook, secret } = await createWebhook(tx, ctx.caller, ctx.body);
        ctx.koa.set('Location', `/api/v1/webhooks/${webhook.uuid}`);
        ctx.koa.set('Cache-Control', 'no-store');
        return { ...webhookView(webhook), secret };
      }),
  }),
  route<{ uuid: string }>({
    method: 'get',
    path: '/webhooks/{uuid}',
    requires: 'webhooks.manage',
    tag: TAG,
    summary: 'Show a webhook (never its secret)',
    response: webhookSchema,
    async handler(ctx) {
      return webhookView(await findWebhook(ctx, ctx.params.uuid));
    },
  }),
  route<{ uuid: string }, {}, UpdateBody>({
    method: 'put',
    path: '/webhooks/{uuid}',
    requires: 'webhooks.manage',
    tag: TAG,
    audit: 'webhook.update',
    summary:
      'Update a webhook: url, description, events, app_uuids, include_review_apps, enabled (re-enabling resets the failure count)',
    body: updateWebhookBody,
    response: webhookSchema,
    handler: (ctx) =>
      write(ctx, async (tx) =>
        webhookView(await updateWebhook(tx, ctx.caller, { ...ctx.body, uuid: ctx.params.uuid })),
      ),
  }),
  route<{ uuid: string }>({
    method: 'delete',
    path: '/webhooks/{uuid}',
    requires: 'webhooks.manage',
    tag: TAG,
    status: 204,
    audit: 'webhook.delete',
    summary: 'Delete a webhook and its delivery history (deliveries in flight stop)',
    async handler(ctx) {
      await ctx.deps.dataSource.transaction(async (m) => {
        // The row as it was, from the delete itself: of two concurrent deletes, the second finds nothing (404).
        const [deleted] = await rows<{ s: Record<string, unknown> }>(
          m,
          `DELETE FROM webhooks t WHERE uuid = $1 AND workspace_uuid = $2 RETURNING to_jsonb(t) AS s`,
          [ctx.params.uuid, ctx.caller.workspaceUuid],
        );
        if (!deleted) throw notFound('webhook');
        await recordAudit(m, ctx, { resourceUuid: deleted.s.uuid as string, before: deleted.s, after: null });
      });
      return undefined;
    },
  }),
  route<{ uuid: string }>({
    method: 'post',
    path: '/webhooks/{uuid}/test',
    requires: 'webhooks.manage',
    tag: TAG,
    audit: 'webhook.test',
    summary:
      'Send a signed ping now, even to a disabled webhook; always 200 with the delivery (read status and response_code)',
    response: deliverySchema,
    async handler(ctx) {
      const webhook = await findWebhook(ctx, ctx.params.uuid);
      const eventId = randomUUID();
      const envelope: EventEnvelope = { id: eventId, type: 'ping', timestamp: new Date().toISOString(), data: {} };
      const body = JSON.stringify(envelope);
      await ctx.deps.dataSource.transaction(async (m) => {
        await m.query(
          `INSERT INTO events (uuid, workspace_uuid, type, app_uuid, payload) VALUES ($1, $2, 'ping', NULL, $3)`,
          [eventId, ctx.caller.workspaceUuid, body],
        );
        const deliveryUuid = randomUUID();
        await m.query(
          `INSERT INTO webhook_deliveries (uuid, webhook_uuid, event_id, event_type, body) VALUES ($1, $2, $3, 'ping', $4)`,
          [deliveryUuid, webhook.uuid, eventId, body],
        );
        // The webhook's entry: the ping delivery this test created.
        await recordAudit(m, ctx, {
          resourceUuid: webhook.uuid,
          before: null,
          after: await snapshot(m, 'webhook_deliveries', deliveryUuid),
        });
      });
      try {
        await startWebhookDelivery(ctx.deps.temporal, ctx.deps.config.taskQueue, ctx.caller.workspaceUuid, {
          webhookUuid: webhook.uuid,
          eventId,
          ping: true,
        });
        const handle = ctx.deps.temporal.workflow.getHandle(webhookDeliveryWorkflowId(webhook.uuid, eventId));
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          handle.result(),
          new Promise((resolve) => {
            timer = setTimeout(resolve, PING_WAIT_MS);
          }),
        ]).finally(() => clearTimeout(timer));
      } catch (err) {
        ctx.deps.logger.warn({ err, webhookUuid: webhook.uuid, eventId }, 'test ping could not be sent');
        await ctx.deps.dataSource.query(
          `UPDATE webhook_deliveries SET status = 'failed', message = $3 WHERE webhook_uuid = $1 AND event_id = $2 AND status = 'pending'`,
          [webhook.uuid, eventId, 'the ping could not be queued; try again'],
        );
      }
      const row = await ctx.deps.dataSource.manager.findOneBy(WebhookDelivery, {
        webhook_uuid: webhook.uuid,
        event_id: eventId,
      });
      return deliveryView(row!);
    },
  }),
  route<{ uuid: string }, Page, unknown>({
    method: 'get',
    path: '/webhooks/{uuid}/deliveries',
    requires: 'webhooks.manage',
    tag: TAG,
    paginated: true,
    summary: 'Recent deliveries of a webhook, newest first, one per event (the last 50 events are kept)',
    response: yup.array(deliverySchema),
    async handler(ctx) {
      const webhook = await findWebhook(ctx, ctx.params.uuid);
      const list = await pageOf(
        ctx,
        ctx.deps.dataSource.manager
          .createQueryBuilder(WebhookDelivery, 'd')
          .where('d.webhook_uuid = :webhook', { webhook: webhook.uuid })
          .orderBy('d.seq', 'DESC'),
      );
      return list.map(deliveryView);
    },
  }),
  route<{ uuid: string; delivery_uuid: string }>({
    method: 'get',
    path: '/webhooks/{uuid}/deliveries/{delivery_uuid}',
    requires: 'webhooks.manage',
    tag: TAG,
    summary: 'Show one delivery',
    response: deliverySchema,
    async handler(ctx) {
      const webhook = await findWebhook(ctx, ctx.params.uuid);
      return deliveryView(await findDelivery(ctx, webhook.uuid, ctx.params.delivery_uuid));
    },
  }),
  route<{ uuid: string; delivery_uuid: string }>({
    method: 'post',
    path: '/webhooks/{uuid}/deliveries/{delivery_uuid}/retry',
    requires: 'webhooks.manage',
    tag: TAG,
    audit: 'webhook_delivery.retry',
    summary:
      'Re-queue the stored payload under the original event id; the delivery returns pending (422 when the webhook is disabled)',
    response: deliverySchema,
    async handler(ctx) {
      // The status, the audit entry and the re-queue (an outbox operation) commit together;
      // the re-queue is sent after the commit, and by the worker's reconciler if it is not.
      const { delivery, op } = await ctx.deps.dataSource.transaction(async (m) => {
        const webhook = await findWebhook(ctx, ctx.params.uuid, m);
        const found = await findDelivery(ctx, webhook.uuid, ctx.params.delivery_uuid, m);
        if (!webhook.enabled)
          throw unprocessable('the webhook is disabled: re-enable it (PUT enabled: true) before retrying deliveries');
        const before = await snapshot(m, 'webhook_deliveries', found.uuid);
        // A pending delivery stays pending and is only signalled again.
        const moved = await one<WebhookDelivery>(
          m,
          `UPDATE webhook_deliveries SET status = 'pending' WHERE uuid = $1 AND status IN ('failed', 'delivered') RETURNING ${columnsOf(WebhookDelivery)}`,
          [found.uuid],
        );
        const queued = await ctx.deps.outbox.enqueue(
          m,
          redeliveryOperation(ctx.caller.workspaceUuid, {
            webhookUuid: webhook.uuid,
            eventId: found.event_id,
            ...(found.event_type === 'ping' ? { ping: true } : {}),
          }),
        );
        await recordAudit(m, ctx, {
          resourceUuid: found.uuid,
          before,
          after: await snapshot(m, 'webhook_deliveries', found.uuid),
        });
        return { delivery: moved ?? found, op: queued };
      });
      // A Temporal outage here is logged and left to the reconciler: the retry is committed, the answer stays 200.
      await ctx.deps.outbox.dispatch(op);
      return deliveryView(delivery);
    },
  }),
];
