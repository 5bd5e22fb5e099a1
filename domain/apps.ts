/**
 * Pure rules of apps (contract: App, States, the moves table): state names, which state
 * changes a person may ask for from which state, names, ports, variable keys.
 */
import { workflowIdOf } from './search-attributes';

/** Provisioning states, the live orchestrator statuses, and sleeping (contract: States). */
export const APP_PROVISIONING_STATES = [
  'pending',
  'assigned',
  'start_scheduled',
  'started',
  'deploying',
  'cloning',
  'stop_scheduled',
  'restart_scheduled',
  'stopped',
  'blocked',
] as const;
export const APP_LIVE_STATES = ['running', 'failed', 'problem'] as const;
/** `deleting` is Berth's: DELETE answers 202 and the app reads deleting until it is gone. */
export const APP_STATES = [...APP_PROVISIONING_STATES, ...APP_LIVE_STATES, 'sleeping', 'deleting'] as const;
export type AppState = (typeof APP_STATES)[number];
export type LiveStatus = (typeof APP_LIVE_STATES)[number];

export const DEPLOYMENT_STATES = ['pending', 'running', 'completed', 'failed', 'cancelling', 'cancelled'] as const;
export type DeploymentState = (typeof DEPLOYMENT_STATES)[number];
export const DEPLOYMENT_PERIODS = ['7days', '30days', '90days', 'all'] as const;
export type DeploymentPeriod = (typeof DEPLOYMENT_PERIODS)[number];
export const PERIOD_DAYS: Record<DeploymentPeriod, number | null> = {
  '7days': 7,
  '30days': 30,
  '90days': 90,
  all: null,
};

/**
 * Deployment methods. The contract names `<code_host_kind>` and `<deploy_tool_kind>`
 * without spelling them; Berth's values are `github` (a code host) and `cli_upload` (the
 * deploy tool's zip/SFTP upload, which has no commit).
 */
export const DEPLOYMENT_METHODS = [
  'git_push',
  'public_git',
  'github',
  'container_registry',
  'parent_image',
  'cli_upload',
] as const;
export type DeploymentMethod = (typeof DEPLOYMENT_METHODS)[number];
export const GIT_METHODS: readonly DeploymentMethod[] = ['git_push', 'public_git', 'github'];
export const BUILDERS = ['auto', 'dockerfile', 'custom'] as const;

export function isGitMethod(method: string): boolean {
  return (GIT_METHODS as readonly string[]).includes(method);
}

/**
 * Git methods whose app deploys its branch head at creation (once provisioned): the
 * repository has one. A git_push app's repository starts empty: its first push deploys.
 */
export function deploysBranchHeadAtCreation(method: string): boolean {
  return method === 'public_git' || method === 'github';
}

/** What PATCH /apps/{uuid}/state accepts. */
export const STATE_ACTIONS = ['start', 'stop', 'restart', 'schedule_start', 'schedule_stop'] as const;
export type StateAction = (typeof STATE_ACTIONS)[number];

const AWAKE: readonly AppState[] = ['started', 'running', 'failed', 'problem'];

/**
 * The moves a person may ask for: from which states each action is accepted, and the
 * state the app reads at once (the app's workflow carries the move out). A sleeping app
 * accepts schedule_start and schedule_stop only (contract: moves table); start, stop and
 * restart need an awake app. Anything else is a 422.
 */
export const STATE_MOVES: Record<StateAction, { from: readonly AppState[]; to: AppState }> = {
  start: { from: ['stopped', 'failed'], to: 'start_scheduled' },
  schedule_start: { from: ['stopped', 'failed', 'sleeping'], to: 'start_scheduled' },
  stop: { from: AWAKE, to: 'stop_scheduled' },
  schedule_stop: { from: [...AWAKE, 'sleeping'], to: 'stop_scheduled' },
  restart: { from: AWAKE, to: 'restart_scheduled' },
};

export function stateMove(action: StateAction, current: string): AppState | null {
  const move = STATE_MOVES[action];
  return (move.from as readonly string[]).includes(current) ? move.to : null;
}

/** Deployments may start from these app states (the app reads `deploying` meanwhile). */
export const DEPLOYABLE_STATES: readonly AppState[] = [
  'started',
  'running',
  'failed',
  'problem',
  'stopped',
  'sleeping',
];

/** Free-plan idle time before an app sleeps (contract: Limits). */
export const FREE_PLAN_IDLE_MS = 30 * 60 * 1000;
export function isFreePlan(planType: string | null | undefined): boolean {
  return planType === 'free';
}

/** Health events the data plane reports (contract: Event types), and what each does to the state. */
export const HEALTH_EVENTS = [
  'app_unhealthy',
  'app_crash_loop',
  'app_stopped',
  'app_blocked',
  'scaling_limit_reached',
] as const;
export type HealthEvent = (typeof HEALTH_EVENTS)[number];
export const HEALTH_EVENT_STATE: Record<HealthEvent, AppState | null> = {
  app_unhealthy: 'problem',
  app_crash_loop: 'failed',
  // the platform gave up on an app that keeps crashing: it is stopped
  app_stopped: 'stopped',
  app_blocked: 'blocked',
  scaling_limit_reached: null,
};

/** Names as sent: a DNS label the suffix is appended to (`web` -> `web-k3x9q2`). */
export const APP_NAME = /^[a-z](?:[a-z0-9-]{0,38}[a-z0-9])?$/;
export const NAME_SUFFIX_LENGTH = 6;
const SUFFIX_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** `random` yields numbers in [0, 1). */
export function suffixedName(sent: string, random: () => number): string {
  let suffix = '';
  for (let i = 0; i < NAME_SUFFIX_LENGTH; i++) suffix += SUFFIX_ALPHABET[Math.floor(random() * SUFFIX_ALPHABET.length)];
  return `${sent}-${suffix}`;
}

export function internalUrl(serviceName: string, port: number): string {
  return `${serviceName}:${port}`;
}

/**
 * Built from the app name (with its suffix) and the region of its compute resource; the
 * port is where the ingress answers HTTPS, shown unless it is 443 (so the URL answers as printed).
 */
export function publicUrl(name: string, regionDomain: string, httpsPort = 443): string {
  return `https://${name}.${regionDomain}${httpsPort === 443 ? '' : `:${httpsPort}`}`;
}

/** Environment variable names (POSIX portable: letters, digits, underscore, not a digit first). */
export const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const SECRET_FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The pool external ports come from: a public port is never given its internal number. */
export const EXTERNAL_PORT_POOL = { low: 30000, high: 32767 } as const;

/**
 * A candidate from the pool for a port with this internal number: `start` (any integer)
 * picks where to look from; the internal port itself is skipped.
 */
export function externalPortCandidate(start: number, internalPort: number, attempt: number): number {
  const size = EXTERNAL_PORT_POOL.high - EXTERNAL_PORT_POOL.low + 1;
  let p = EXTERNAL_PORT_POOL.low + ((((start + attempt) % size) + size) % size);
  if (p === internalPort) p = p === EXTERNAL_PORT_POOL.high ? EXTERNAL_PORT_POOL.low : p + 1;
  return p;
}

/** The operation of an app's lifecycle workflow (`appLifecycle`, id `app/<uuid>`). */
export const APP_OPERATION = 'app';

/** Signals of the app workflow (`app/<uuid>`): the driver and routes reach it by these names. */
export const APP_SIGNALS = {
  command: 'appCommand',
  traffic: 'appTraffic',
  health: 'appHealth',
  liveStatus: 'appLiveStatus',
} as const;

export function appWorkflowId(appUuid: string): string {
  return workflowIdOf(APP_OPERATION, appUuid);
}
