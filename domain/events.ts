/** Events that carry data.resource_name and data.labels (Events, rule 1). */
const RESOURCE_EVENTS = [
  'app_state_changed',
  'app_unhealthy',
  'app_crash_loop',
  'app_stopped',
  'app_blocked',
  'scaling_limit_reached',
] as const;

/**
 * The contract's event catalog (Events). `ping` is a test event: it cannot be subscribed
 * to and is never emitted by a workflow (only POST /webhooks/{uuid}/test sends it). There
 * is no build event: build and deployment are one lifecycle (deploy_started/deploy_ended).
 */
export const EVENT_TYPES = ['deploy_started', 'deploy_ended', ...RESOURCE_EVENTS, 'quota_alert', 'ping'] as const;

export type EventType = (typeof EVENT_TYPES)[number];
export type SubscribableEventType = Exclude<EventType, 'ping'>;

export const SUBSCRIBABLE_EVENT_TYPES = EVENT_TYPES.filter((t) => t !== 'ping') as SubscribableEventType[];

export const RESOURCE_EVENT_TYPES: readonly EventType[] = RESOURCE_EVENTS;

/** Workspace-level events: no data.app_id, and they reach every subscribed webhook whatever its app scoping. */
export const WORKSPACE_EVENT_TYPES: readonly EventType[] = ['quota_alert'];

/** data.state of app_state_changed (a person started, stopped or restarted an app). */
export const APP_STATE_EVENT_STATES = ['started', 'stopped', 'failed', 'restart_scheduled'] as const;

/**
 * Commit fields of deploy_started/deploy_ended (their names are Berth's: the contract
 * only says they are null for a zip or SFTP deploy, which has no commit).
 */
export const DEPLOY_COMMIT_FIELDS = ['commit_sha', 'commit_message', 'commit_author'] as const;

/** The delivered body: id equals the webhook-id header; stable across retries and replays. */
export interface EventEnvelope {
  id: string;
  type: EventType;
  timestamp: string;
  data: Record<string, unknown>;
}

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

/** An event a workflow tried to emit that breaks the catalog's rules (a bug in the emitter, not a transient failure). */
export class InvalidEventError extends Error {
  override readonly name = 'InvalidEventError';
}

/** The compute resource an app runs on, for data.resource_name and data.labels. */
export interface EventResource {
  name: string;
  labels: readonly string[];
}

/**
 * Checks an event against the catalog and completes its data: data.app_id for every
 * app-scoped event, data.message (null unless the deployment failed) on deploy_ended,
 * null commit fields on deploys that have no commit, data.resource_name and data.labels
 * on the app health and state events. Returns the data as delivered, app_id first.
 */
export function eventData(
  type: string,
  appUuid: string | null,
  data: Record<string, unknown>,
  resource: EventResource | null,
): Record<string, unknown> {
  if (!isEventType(type)) throw new InvalidEventError(`unknown event type "${type}"`);
  if (type === 'ping') throw new InvalidEventError('ping is a test event: only POST /webhooks/{uuid}/test sends it');
  const out: Record<string, unknown> = {};
  if (WORKSPACE_EVENT_TYPES.includes(type)) {
    if (appUuid !== null) throw new InvalidEventError(`${type} is a workspace-level event and carries no app_id`);
  } else {
    if (!appUuid) throw new InvalidEventError(`${type} carries data.app_id: an app (or static site) uuid is required`);
    out.app_id = appUuid;
  }
  for (const [k, v] of Object.entries(data)) if (k !== 'app_id') out[k] = v;
  if (type === 'deploy_started' || type === 'deploy_ended') {
    for (const field of DEPLOY_COMMIT_FIELDS) if (out[field] === undefined) out[field] = null;
  }
  if (type === 'deploy_ended') {
    if (out.message === undefined) out.message = null;
    if (out.message !== null && typeof out.message !== 'string')
      throw new InvalidEventError('deploy_ended data.message is the failure reason (a string) or null');
  }
  if (type === 'app_state_changed' && !(APP_STATE_EVENT_STATES as readonly unknown[]).includes(out.state)) {
    throw new InvalidEventError(
      `app_state_changed data.state must be one of ${APP_STATE_EVENT_STATES.join(', ')}, got ${JSON.stringify(out.state)}`,
    );
  }
  if (RESOURCE_EVENT_TYPES.includes(type)) {
    if (out.resource_name === undefined) out.resource_name = resource?.name ?? null;
    if (out.labels === undefined) out.labels = [...(resource?.labels ?? [])];
    if (!Array.isArray(out.labels))
      throw new InvalidEventError(`${type} data.labels is an array of the resource's labels`);
  }
  return out;
}
