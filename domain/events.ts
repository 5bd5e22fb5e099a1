/** The contract's event catalog (Events). `ping` is a test event and cannot be subscribed to. */
export const EVENT_TYPES = [
  'deploy_started',
  'deploy_ended',
  'app_state_changed',
  'app_unhealthy',
  'app_crash_loop',
  'app_stopped',
  'app_blocked',
  'scaling_limit_reached',
  'quota_alert',
  'ping',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export const SUBSCRIBABLE_EVENT_TYPES = EVENT_TYPES.filter((t) => t !== 'ping') as Exclude<EventType, 'ping'>[];

/** Events that carry data.resource_name and data.labels (Events, rule 1). */
export const RESOURCE_EVENT_TYPES: readonly EventType[] = [
  'app_state_changed', 'app_unhealthy', 'app_crash_loop', 'app_stopped', 'app_blocked', 'scaling_limit_reached',
];

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
