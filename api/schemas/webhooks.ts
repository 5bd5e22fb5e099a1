import { EVENT_TYPES } from '../../domain/events';
import { arr, bool, obj, oneOf, str, uuid } from './common';

/** Fields of a webhook a client sets (DESIGN "Decisions"); the contract names app_uuids and include_review_apps. */
const fields = {
  url: str().trim().min(1).max(2048),
  description: str().max(1000),
  /** Subscribed types; empty or absent means all. `ping` passes the shape check and is refused as a rule (422). */
  events: arr(oneOf(EVENT_TYPES).required()).max(EVENT_TYPES.length * 2),
  app_uuids: arr(uuid().required()).max(200),
  include_review_apps: bool(),
  enabled: bool(),
};

export const createWebhookBody = obj({ ...fields, url: fields.url.required() });
export const updateWebhookBody = obj(fields);
