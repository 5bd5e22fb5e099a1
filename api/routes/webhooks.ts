import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
import { WEBHOOK_ATTEMPT_TIMEOUT_MS, webhookDeliveryWorkflowId } from '../../domain/webhooks';
import { Webhook } from '../../entities/webhook';
import { WebhookDelivery } from '../../entities/webhook-delivery';
import { deleteOfWorkspace, write } from '../commands/audited-write';
import { createPing, createWebhook, retryDelivery, updateWebhook } from '../commands/webhooks';
import { startWebhookDelivery } from '../../platform/webhook-starts';
import { pageOf, type Page } from '../pagination';
import { notFound } from '../problem';
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
    handler: (ctx) =>
      write(ctx, async (tx) => {
        await deleteOfWorkspace(tx, ctx.caller, Webhook, {
          uuid: ctx.params.uuid,
          action: 'webhook.delete',
          what: 'webhook',
        });
      }),
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
      const { event_id: eventId } = await write(ctx, (tx) => createPing(tx, ctx.caller, webhook));
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
        await ctx.deps.dataSource.manager.update(
          WebhookDelivery,
          { webhook_uuid: webhook.uuid, event_id: eventId, status: 'pending' },
          { status: 'failed', message: 'the ping could not be queued; try again' },
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
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const webhook = await findWebhook(ctx, ctx.params.uuid, tx.m);
        const found = await findDelivery(ctx, webhook.uuid, ctx.params.delivery_uuid, tx.m);
        // A Temporal outage after the commit is logged and left to the reconciler: the retry is committed, the answer stays 200.
        return deliveryView(await retryDelivery(tx, ctx.caller, webhook, found));
      }),
  }),
];
