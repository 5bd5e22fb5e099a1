/**
 * Webhook delivery rules shared by the API, the activities and the delivery workflow
 * (pure: it imports only domain/, so the workflow sandbox can use it).
 */
import { workflowIdOf } from './search-attributes';

/** Total attempts per event (Limits: webhook attempts). */
export const WEBHOOK_MAX_ATTEMPTS = 9;

/** Waits before attempts 2..9: 30 s, 2 m, 8 m, 30 m, 1 h, 3 h, 8 h, 12 h (Delivery and verification, 4). */
export const WEBHOOK_RETRY_DELAYS_MS: readonly number[] = [
  30_000,
  2 * 60_000,
  8 * 60_000,
  30 * 60_000,
  60 * 60_000,
  3 * 60 * 60_000,
  8 * 60 * 60_000,
  12 * 60 * 60_000,
];

/** Jitter: each wait is its nominal delay times a factor drawn from [1 - J, 1 + J]. */
export const WEBHOOK_RETRY_JITTER = 0.1;

/** Consecutive failed deliveries (each after exhausting its retries) that disable a webhook. */
export const WEBHOOK_DISABLE_AFTER_FAILURES = 3;

/** Delivery history kept per webhook (the newest events). */
export const WEBHOOK_DELIVERIES_KEPT = 50;

/** A delivery's message: the response body or transport error, truncated to this many characters. */
export const WEBHOOK_MESSAGE_MAX = 500;

/** One attempt's HTTP deadline (connect, headers and body). */
export const WEBHOOK_ATTEMPT_TIMEOUT_MS = 10_000;

export const WEBHOOK_DELIVERY_OPERATION = 'webhook-delivery';
export const WEBHOOK_DELIVERY_WORKFLOW = 'webhookDelivery';
/** Signal a manual retry sends: an idle run starts over, a waiting one attempts now. */
export const WEBHOOK_REDELIVER_SIGNAL = 'redeliver';

/** The delivery workflow's argument: identifiers only (the secret is read inside the activity). */
export interface WebhookDeliveryArgs {
  webhookUuid: string;
  eventId: string;
  /** A test ping: one attempt, sent even to a disabled webhook. */
  ping?: boolean;
}

/** `webhook-delivery/<webhook uuid>/<event id>`: one workflow id per webhook and event. */
export function webhookDeliveryWorkflowId(webhookUuid: string, eventId: string): string {
  return workflowIdOf(WEBHOOK_DELIVERY_OPERATION, webhookUuid, eventId);
}

/**
 * The wait before attempt `nextAttempt` (2..9), with jitter. `random` is a number in
 * [0, 1) (the workflow's deterministic Math.random).
 */
export function webhookRetryDelayMs(nextAttempt: number, random: number): number {
  const nominal = WEBHOOK_RETRY_DELAYS_MS[nextAttempt - 2];
  if (nominal === undefined) throw new RangeError(`no retry before attempt ${nextAttempt}`);
  return Math.round(nominal * (1 + WEBHOOK_RETRY_JITTER * (2 * random - 1)));
}

/** Offset of attempt n (1..9) from the first, without jitter. */
export function webhookAttemptOffsetMs(attempt: number): number {
  return WEBHOOK_RETRY_DELAYS_MS.slice(0, attempt - 1).reduce((a, b) => a + b, 0);
}

export function truncateMessage(message: string): string {
  return [...message].slice(0, WEBHOOK_MESSAGE_MAX).join('');
}
