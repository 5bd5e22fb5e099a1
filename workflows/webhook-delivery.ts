import { condition, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { DeliveryAttemptResult } from '../activities/webhooks';
import {
  WEBHOOK_MAX_ATTEMPTS,
  WEBHOOK_REDELIVER_SIGNAL,
  webhookRetryDelayMs,
  type WebhookDeliveryArgs,
} from '../domain/webhooks';
import { stateQuery } from './common';
import { quickDb } from './activity-options';

/** A manual retry: a finished cycle starts over under the same event id; a waiting one attempts now. */
export const redeliverSignal = defineSignal(WEBHOOK_REDELIVER_SIGNAL);

// One attempt: DNS (a few seconds) plus the 10 s HTTP deadline plus bookkeeping, within a minute.
const { attemptWebhookDelivery, notifyWebhookDisabled } = proxyActivities<Activities>(quickDb);

/** Where a delivery is, as its `state` query answers: attempting, waiting between attempts, then the last outcome. */
export type WebhookDeliveryState =
  | 'attempting'
  | `attempt ${number} of ${number}`
  | `waiting ${number} s before attempt ${number}`
  | 'notifying admins'
  | DeliveryAttemptResult['outcome'];

/**
 * Delivers one event to one webhook (id `webhook-delivery/<webhook>/<event>`): attempt
 * now; after a failed attempt wait 30 s, 2 m, 8 m, 30 m, 1 h, 3 h, 8 h, 12 h (with
 * jitter) before the next, 9 attempts in all. The activity records each attempt on the
 * delivery row and concludes it; when failures disable the webhook, the admins are
 * e-mailed. A `redeliver` signal (manual retry) that arrives after the cycle finished
 * starts another cycle; one that arrives while waiting cuts the wait short.
 */
export async function webhookDelivery(input: WebhookDeliveryArgs): Promise<string> {
  let state: WebhookDeliveryState = 'attempting';
  let requested = 0;
  let handled = 0;
  setHandler(stateQuery, () => state);
  setHandler(redeliverSignal, () => {
    requested += 1;
  });
  const maxAttempts = input.ping ? 1 : WEBHOOK_MAX_ATTEMPTS;
  let result: DeliveryAttemptResult = { outcome: 'retry', responseCode: null, notifyDisabled: false };
  for (let cycle = 1; ; cycle++) {
    handled = requested;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      state = `attempt ${attempt} of ${maxAttempts}`;
      result = await attemptWebhookDelivery({
        webhookUuid: input.webhookUuid,
        eventId: input.eventId,
        attempt,
        final: attempt === maxAttempts,
        cycle,
        ping: input.ping ?? false,
      });
      if (result.outcome !== 'retry') break;
      const delay = webhookRetryDelayMs(attempt + 1, Math.random());
      state = `waiting ${Math.round(delay / 1000)} s before attempt ${attempt + 1}`;
      if (await condition(() => requested > handled, delay)) handled = requested;
    }
    if (result.notifyDisabled) {
      state = 'notifying admins';
      await notifyWebhookDisabled(input.webhookUuid);
    }
    state = result.outcome;
    if (result.outcome === 'gone' || requested === handled) return result.outcome;
  }
}
