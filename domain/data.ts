import { CronExpressionParser } from 'cron-parser';

/** Pure rules of data services: add-on types, sub_path, cron expressions, live states. */

export const DATA_TYPES = ['postgres', 'mysql', 'valkey', 'storage'] as const;
export type DataType = (typeof DATA_TYPES)[number];
/** ADD-01: every add-on type, cron jobs included. */
/** What workflows pass to restore: identifiers and plain choices, never credentials. */
export type RestoreChoice = { backupName: string } | { targetTime: string } | { latest: true };

export const ADDON_TYPES = [...DATA_TYPES, 'cronjob'] as const;

export {
  ADDON_LIVE_STATES,
  ADDON_STATES,
  PROVISIONING_STATES,
  UNHEALTHY_STATES,
  type AddonState,
} from './addon-states';

/** The live status of a healthy add-on of this type (ADD-03). */
export function liveStatus(type: string): string {
  return type === 'storage' ? 'bound' : 'healthy';
}

export const DEFAULT_PORTS: Record<DataType, number> = { postgres: 5432, mysql: 3306, valkey: 6379, storage: 0 };

/**
 * ADD-09: a sub_path is relative, uses forward slashes only and has no `.` or `..`
 * segments (nor empty ones). Answers the reason it is refused, or null when it is fine.
 */
export function subPathProblem(path: string): string | null {
  if (path.length === 0) return 'sub_path must not be empty';
  if (path.length > 255) return 'sub_path must be at most 255 characters';
  if (path.includes('\\')) return 'sub_path must not contain backslashes';
  if (path.startsWith('/')) return 'sub_path must be relative (no leading /)';
  if (/[\u0000-\u001f]/.test(path)) return 'sub_path must not contain control characters';
  const segments = path.split('/');
  if (segments.some((s) => s === '.' || s === '..')) return 'sub_path must not contain . or .. segments';
  if (segments.some((s) => s === '')) return 'sub_path must not contain empty segments';
  return null;
}

/** CRN-02: a standard 5-field cron expression (minute hour day-of-month month day-of-week). */
export function cronProblem(expression: string): string | null {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) return `cron must have 5 fields (minute hour day month weekday), got ${fields.length}`;
  try {
    CronExpressionParser.parse(expression.trim());
    return null;
  } catch (err) {
    return `cron is not a valid expression: ${(err as Error).message}`;
  }
}

/** Interval schedules run every `interval` minutes (CRN-03: the default schedule type). */
export const DEFAULT_INTERVAL_MINUTES = 60;
export const MAX_INTERVAL_MINUTES = 7 * 24 * 60;
