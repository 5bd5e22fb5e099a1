/** Audit log rules: what a field-level diff is and which fields it never shows. */

export type AuditSource = 'api' | 'workflow' | 'code-host' | 'scheduler';

const SECRET_FIELD = /(_sealed$|_hash$|password|secret|token|private_key|auth_key|pre_shared|credentials?$)/i;

export const REDACTED = '[redacted]';

/** Whether a field holds a secret: its values never reach the audit log, only that it changed. */
export function isSecretField(key: string): boolean {
  return SECRET_FIELD.test(key);
}

/** A JSON value with every secret-named key inside it (at any depth) redacted. */
function redactNested(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactNested);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, isSecretField(k) ? REDACTED : redactNested(v)]));
}

/** Fields that change on every write and say nothing about the change. */
const NOISE = new Set(['updated_at', 'created_at']);

export type Diff = Record<string, { from?: unknown; to?: unknown }>;

/**
 * Field-level diff of two snapshots of a record (null before a create, after a delete).
 * Secret fields show as changed with both values redacted, and so do secret-named keys
 * inside JSON values (a health check's header, a setting).
 */
export function diffRecords(before: Record<string, unknown> | null, after: Record<string, unknown> | null): Diff {
  const diff: Diff = {};
  const keys = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  for (const key of [...keys].sort()) {
    if (NOISE.has(key)) continue;
    const from = before ? before[key] : undefined;
    const to = after ? after[key] : undefined;
    if (JSON.stringify(from) === JSON.stringify(to)) continue;
    const secret = isSecretField(key);
    const entry: { from?: unknown; to?: unknown } = {};
    if (before && key in before) entry.from = secret ? REDACTED : redactNested(from);
    if (after && key in after) entry.to = secret ? REDACTED : redactNested(to);
    diff[key] = entry;
  }
  return diff;
}
