import { randomUUID } from 'node:crypto';
import type * as yup from 'yup';
import { checkDestination, parseAllowList, resolvedVerdict } from '../../domain/webhook-destination';
import { generateWebhookSecret } from '../../domain/webhook-signature';
import type { EventEnvelope } from '../../domain/events';
import { App } from '../../entities/app';
import { PlatformEvent } from '../../entities/event';
import { insertReturning, updateReturning, updateWhereReturning } from '../../entities/sql';
import { Webhook } from '../../entities/webhook';
import { WebhookDelivery } from '../../entities/webhook-delivery';
import { redeliveryOperation } from '../../platform/webhook-starts';
import { createHostResolver, ResolutionError } from '../../platform/resolver';
import type { ApiDeps, Caller } from '../context';
import { notFound, unprocessable } from '../problem';
import type { createWebhookBody, updateWebhookBody } from '../schemas/webhooks';
import { snapshotOf, type Tx } from './audited-write';

export type CreateWebhookInput = yup.InferType<typeof createWebhookBody>;
export type UpdateWebhookInput = yup.InferType<typeof updateWebhookBody> & { uuid: string };

/**
 * The destination rules (Delivery and verification, 9): http(s), no private address,
 * no internal name; a hostname must resolve now, and only to public addresses (it is
 * resolved again before every delivery attempt).
 */
export async function checkUrl(config: ApiDeps['config'], url: string): Promise<void> {
  const allow = parseAllowList(config.webhookAllowCidrs);
  const destination = checkDestination(url, allow);
  const refuse = (reason: string) => unprocessable(`url ${reason}`, [{ path: 'body.url', message: reason }]);
  if (!destination.ok) throw refuse(destination.reason);
  if (destination.literal) return;
  let addresses: string[];
  try {
    addresses = await createHostResolver(config.dnsServers).resolve(destination.host);
  } catch (err) {
    if (err instanceof ResolutionError) throw refuse(`is refused: ${err.message}`);
    throw err;
  }
  const verdict = resolvedVerdict(destination.host, addresses, allow);
  if (!verdict.allowed) throw refuse(`is refused: ${verdict.reason}`);
}

/** ping is a test event, never a subscription; a type listed twice counts once. */
function checkEvents(events: readonly string[] | undefined): string[] | undefined {
  if (events === undefined) return undefined;
  if (events.includes('ping')) {
    throw unprocessable('ping is a test event and cannot be subscribed to', [
      { path: 'body.events', message: 'ping is not subscribable' },
    ]);
  }
  return [...new Set(events)];
}

/** app_uuids must be apps of the caller's workspace. */
async function checkApps(
  tx: Tx,
  caller: Caller,
  appUuids: readonly string[] | undefined,
): Promise<string[] | undefined> {
  if (appUuids === undefined) return undefined;
  const ids = [...new Set(appUuids.map((a) => a.toLowerCase()))];
  if (ids.length === 0) return ids;
  const found = await tx.m
    .createQueryBuilder(App, 'a')
    .select('a.uuid')
    .where('a.workspace_uuid = :workspace AND a.uuid IN (:...ids)', { workspace: caller.workspaceUuid, ids })
    .getMany();
  const missing = ids.filter((id) => !found.some((f) => f.uuid === id));
  if (missing.length > 0) {
    throw unprocessable(
      `app_uuids must be apps of this workspace: ${missing.join(', ')}`,
      missing.map((id) => ({ path: 'body.app_uuids', message: `${id} is not an app of this workspace` })),
    );
  }
  return ids;
}

/** POST /webhooks: the webhook and its signing secret, returned this once (the row keeps it sealed). */
export async function createWebhook(
  tx: Tx,
  caller: Caller,
  b: CreateWebhookInput,
): Promise<{ webhook: Webhook; secret: string }> {
  const events = checkEvents(b.events) ?? [];
  await checkUrl(tx.deps.config, b.url);
  const secret = generateWebhookSecret();
  const values: Partial<Webhook> = {
    uuid: randomUUID(),
    workspace_uuid: caller.workspaceUuid,
    url: b.url,
    description: b.description ?? '',
    events,
    app_uuids: (await checkApps(tx, caller, b.app_uuids)) ?? [],
    include_review_apps: b.include_review_apps ?? false,
    enabled: b.enabled ?? true,
    secret_sealed: tx.deps.secretBox.seal(secret),
  };
  const webhook = (await insertReturning(tx.m, Webhook, values))!;
  await tx.audit({ action: 'webhook.create', resourceUuid: webhook.uuid, before: null, after: snapshotOf(webhook) });
  return { webhook, secret };
}

/**
 * PUT /webhooks/{uuid}: url (destination rules), description, events, app_uuids,
 * include_review_apps, enabled; fields left out keep their value, and so does the secret.
 * Re-enabling resets the failure count (WH-14); disabling stamps disabled_at.
 */
export async function updateWebhook(tx: Tx, caller: Caller, input: UpdateWebhookInput): Promise<Webhook> {
  const events = checkEvents(input.events);
  if (input.url !== undefined) await checkUrl(tx.deps.config, input.url);
  const current = await tx.m.findOne(Webhook, {
    where: { uuid: input.uuid, workspace_uuid: caller.workspaceUuid },
    lock: { mode: 'pessimistic_write' },
  });
  if (!current) throw notFound('webhook');
  const apps = await checkApps(tx, caller, input.app_uuids);
  const enabled = input.enabled ?? current.enabled;
  const changes: Partial<Webhook> = {
    url: input.url ?? current.url,
    description: input.description ?? current.description,
    events: events ?? current.events,
    app_uuids: apps ?? current.app_uuids,
    include_review_apps: input.include_review_apps ?? current.include_review_apps,
    enabled,
    // the row is locked: what was read is what is changed
    consecutive_failures: enabled && !current.enabled ? 0 : current.consecutive_failures,
    disabled_at: enabled ? null : current.enabled ? new Date() : current.disabled_at,
    disable_notice_pending: enabled ? false : current.disable_notice_pending,
  };
  const updated = (await updateReturning(tx.m, Webhook, current.uuid, changes))!;
  await tx.audit({
    action: 'webhook.update',
    resourceUuid: current.uuid,
    before: snapshotOf(current),
    after: snapshotOf(updated),
  });
  return updated;
}

/**
 * POST /webhooks/{uuid}/test: a ping event and its delivery to the webhook (pending), recorded
 * as the webhook's entry; the caller starts its delivery once committed.
 */
export async function createPing(tx: Tx, caller: Caller, webhook: Webhook): Promise<WebhookDelivery> {
  const eventId = randomUUID();
  const envelope: EventEnvelope = { id: eventId, type: 'ping', timestamp: new Date().toISOString(), data: {} };
  const body = JSON.stringify(envelope);
  await insertReturning(tx.m, PlatformEvent, {
    uuid: eventId,
    workspace_uuid: caller.workspaceUuid,
    type: 'ping',
    app_uuid: null,
    payload: envelope,
  });
  const delivery = (await insertReturning(tx.m, WebhookDelivery, {
    uuid: randomUUID(),
    webhook_uuid: webhook.uuid,
    event_id: eventId,
    event_type: 'ping',
    body,
  }))!;
  await tx.audit({ action: 'webhook.test', resourceUuid: webhook.uuid, before: null, after: snapshotOf(delivery) });
  return delivery;
}

/**
 * POST /webhooks/{uuid}/deliveries/{delivery_uuid}/retry: the stored payload is re-queued under
 * the original event id (an outbox start); a finished delivery returns to pending, a pending
 * one stays pending and is only signalled again. Refused while the webhook is disabled.
 */
export async function retryDelivery(
  tx: Tx,
  caller: Caller,
  webhook: Webhook,
  found: WebhookDelivery,
): Promise<WebhookDelivery> {
  if (!webhook.enabled)
    throw unprocessable('the webhook is disabled: re-enable it (PUT enabled: true) before retrying deliveries');
  const [moved] = await updateWhereReturning(
    tx.m,
    WebhookDelivery,
    { status: 'pending' },
    `uuid = :uuid AND status IN ('failed', 'delivered')`,
    { uuid: found.uuid },
  );
  await tx.enqueue(
    redeliveryOperation(caller.workspaceUuid, {
      webhookUuid: webhook.uuid,
      eventId: found.event_id,
      ...(found.event_type === 'ping' ? { ping: true } : {}),
    }),
  );
  const delivery = moved ?? found;
  await tx.audit({
    action: 'webhook_delivery.retry',
    resourceUuid: found.uuid,
    before: snapshotOf(found),
    after: snapshotOf(delivery),
  });
  return delivery;
}
