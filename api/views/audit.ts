import * as yup from 'yup';
import { json, obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import type { AuditEvent } from '../../entities/audit-event';
import { iso } from './common';

export const auditEventSchema = obj({
  uuid: uuid().required(),
  actor: obj({
    type: oneOf(['member', 'workspace_token', 'system'] as const).required(),
    uuid: uuid().nullable().defined(),
  }).required(),
  source: oneOf(['api', 'workflow', 'code-host', 'scheduler'] as const).required(),
  action: str().required(),
  resource_type: str().required(),
  resource_uuid: uuid().nullable().defined(),
  diff: json().required(),
  request_id: str().nullable().defined(),
  client_ip: str().nullable().defined(),
  user_agent: str().nullable().defined(),
  created_at: timestamp().required(),
});

/** An allow-list of the entry: the workspace and the app it concerns stay inside. */
export function auditEventView(r: AuditEvent) {
  return {
    uuid: r.uuid,
    actor: { type: r.actor_type, uuid: r.actor_uuid },
    source: r.source,
    action: r.action,
    resource_type: r.resource_type,
    resource_uuid: r.resource_uuid,
    diff: r.diff,
    request_id: r.request_id,
    client_ip: r.client_ip,
    user_agent: r.user_agent,
    created_at: iso(r.created_at)!,
  };
}

/** An entry of an app's activity feed: a change from the audit log, or a platform event. */
export const activitySchema = obj({
  kind: oneOf(['change', 'event'] as const).required(),
  uuid: uuid().required(),
  type: str().required(),
  created_at: timestamp().required(),
  source: str().nullable().defined(),
  actor: obj({ type: str().required(), uuid: uuid().nullable().defined() }).nullable().defined(),
  /** For a change: what changed (the app, or one of its deployments, add-ons, cron jobs, ...); null for an event. */
  resource_type: str().nullable().defined(),
  resource_uuid: uuid().nullable().defined(),
  diff: json().nullable().defined(),
  data: json().nullable().defined(),
});

export const activityListSchema = yup.array(activitySchema);
