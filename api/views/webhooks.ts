import * as yup from 'yup';
import { EVENT_TYPES, SUBSCRIBABLE_EVENT_TYPES } from '../../domain/events';
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
export const createdWebhookSchema = obj({ ...webhookFields, secret: str().matches(/^whsec_/).required() });

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

export interface WebhookRow {
  uuid: string;
  url: string;
  description: string;
  events: string[];
  app_uuids: string[];
  include_review_apps: boolean;
  enabled: boolean;
  consecutive_failures: number;
  created_at: Date;
  updated_at: Date;
}

export const WEBHOOK_COLUMNS = 'uuid, url, description, events, app_uuids, include_review_apps, enabled, consecutive_failures, created_at, updated_at';

export function webhookView(w: WebhookRow): yup.InferType<typeof webhookSchema> {
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

export interface DeliveryRow {
  uuid: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  response_code: number | null;
  message: string;
  attempts: number;
  last_attempt_at: Date | null;
  created_at: Date;
  body: string;
}

export const DELIVERY_COLUMNS = 'uuid, event_id, event_type, status, response_code, message, attempts, last_attempt_at, created_at, body';

export function deliveryView(d: DeliveryRow) {
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
