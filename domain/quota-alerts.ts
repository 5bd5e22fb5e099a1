/**
 * quota_alert (docs/decisions.md "Quota alerts"): a compute resource's allocations (what
 * apps and buckets reserve of its cpu, ram and disk) crossing 80% or 100% of its capacity.
 */
export const QUOTA_ALERT_THRESHOLDS = [80, 100] as const;
export const QUOTA_DIMENSIONS = ['cpu', 'ram', 'disk'] as const;
export type QuotaDimension = (typeof QUOTA_DIMENSIONS)[number];

/** Allocated and total of each dimension (cpu in cores, ram and disk in bytes). */
export type ResourceUsage = Record<QuotaDimension, { allocated: number; total: number }>;

export interface QuotaCrossing {
  dimension: QuotaDimension;
  threshold_percent: (typeof QUOTA_ALERT_THRESHOLDS)[number];
  allocated: number;
  total: number;
}

/**
 * The thresholds an allocation change crossed upwards: below before, at or above after.
 * A change that stays above a threshold crosses nothing, so each crossing alerts once;
 * falling below and rising again is a new crossing.
 */
export function quotaCrossings(before: ResourceUsage, after: ResourceUsage): QuotaCrossing[] {
  return QUOTA_DIMENSIONS.flatMap((dimension) => {
    const { total } = after[dimension];
    if (!(total > 0)) return [];
    const reached = (allocated: number, t: number) => allocated * 100 >= t * total;
    return QUOTA_ALERT_THRESHOLDS.filter(
      (t) => !reached(before[dimension].allocated, t) && reached(after[dimension].allocated, t),
    ).map((t) => ({ dimension, threshold_percent: t, allocated: after[dimension].allocated, total }));
  });
}
