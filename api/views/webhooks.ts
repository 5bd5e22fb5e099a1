import * as yup from 'yup';
import { EVENT_TYPES, SUBSCRIBABLE_EVENT_TYPES } from '../../domain/events';
import type { Webhook } from '../../entities/webhook';
import type { WebhookDelivery } from '../../entities/webhook-delivery';
import { arr, bool, int, json, obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { iso, isoRequired } from './common';

/** DESIGN "Decisions": the webhook record. The secret is never part of it. */
const webhookFields = {
  uuid: uuid().required(),
  url: str().required(),
  description: str().defined(),
  events: arr(oneOf(SUBSCRIBABLE_EVENT_TYPES).required()).required(),
  app_uuids: arr(uuid().required()).required(),
  include_review_apps: bool().required(),
  enabled: bool().required(),
  consecutive_failures: int().min(0).required(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
};

export const webhookSchema = obj(webhookFields);

/** The create response: the record plus the signing secret, shown this once. */
export const createdWebhookSchema = obj({
  ...webhookFields,
  secret: str()
    .matches(/^whsec_/)
    .required(),
});

export const deliverySchema = obj({
  uuid: uuid().required(),
  event_id: uuid().required(),
  event_type: oneOf(EVENT_TYPES).required(),
  status: oneOf(['pending', 'delivered', 'failed'] as const).required(),
  response_code: int().nullable().defined(),
  message: str().defined(),
  attempts: int().min(0).required(),
  last_attempt_at: timestamp().nullable().defined(),
  created_at: timestamp().required(),
  payload: json().required(),
});

/** An allow-list of the entity: the sealed secret and the notice flags are never copied. */
export function webhookView(w: Webhook): yup.InferType<typeof webhookSchema> {
  return {
    uuid: w.uuid,
    url: w.url,
    description: w.description,
    events: [...w.events] as yup.InferType<typeof webhookSchema>['events'],
    app_uuids: [...w.app_uuids],
    include_review_apps: w.include_review_apps,
    enabled: w.enabled,
    consecutive_failures: w.consecutive_failures,
    created_at: isoRequired(w.created_at),
    updated_at: isoRequired(w.updated_at),
  };
}

/** The stored body is the payload; the attempt key and the order stay inside. */
export function deliveryView(d: WebhookDelivery) {
  return {
    uuid: d.uuid,
    event_id: d.event_id,
    event_type: d.event_type,
    status: d.status,
    response_code: d.response_code,
    message: d.message,
    attempts: d.attempts,
    last_attempt_at: iso(d.last_attempt_at),
    created_at: isoRequired(d.created_at),
    payload: JSON.parse(d.body) as Record<string, unknown>,
  };
}
