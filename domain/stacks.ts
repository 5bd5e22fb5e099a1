import type { ComposeWarning, Manifest } from './compose';

/** A stack's computed state (contract: Stack, States). */
export const STACK_STATES = [
  'pending',
  'validating',
  'publishing',
  'building',
  'deploying',
  'running',
  'degraded',
  'failed',
  'stopped',
] as const;
export type StackState = (typeof STACK_STATES)[number];

const IN_FLIGHT = ['validating', 'publishing', 'building', 'deploying'];
const LIVE = ['running', 'healthy', 'bound'];

/**
 * The stack's state is computed, not stored: while a deployment runs, its phase; after a
 * failed deployment, failed; after a completed one, from the live status of its services:
 * all running -> running, all stopped -> stopped, anything else -> degraded.
 */
export function computeStackState(latest: { state: string } | null, serviceStatuses: readonly string[]): StackState {
  if (!latest || latest.state === 'pending') return 'pending';
  if (IN_FLIGHT.includes(latest.state)) return latest.state as StackState;
  if (latest.state === 'failed') return 'failed';
  if (serviceStatuses.length === 0) return 'running';
  if (serviceStatuses.every((s) => LIVE.includes(s))) return 'running';
  if (serviceStatuses.every((s) => s === 'stopped' || s === 'stop_scheduled')) return 'stopped';
  return 'degraded';
}

/** A stack codename: lowercase letters, digits and hyphens, 3-40 characters. */
export const STACK_NAME = /^[a-z0-9][a-z0-9-]{1,38}[a-z0-9]$/;
/** Environment variable names a compose file can interpolate. */
export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The stack-analyze workflow's input and answer (the API starts it and waits on it). */
export interface AnalyzeInput {
  workspaceUuid: string;
  repositoryUrl: string;
  branch: string;
  composePath: string;
  credentialId: string | null;
}

export interface AnalyzeResult {
  commitSha: string;
  manifest: Manifest;
  warnings: ComposeWarning[];
}
