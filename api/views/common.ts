/** ISO 8601 UTC timestamps, or null. */
export function iso(d: Date | string | null | undefined): string | null {
  if (d === null || d === undefined) return null;
  return (d instanceof Date ? d : new Date(d)).toISOString();
}

export function isoRequired(d: Date | string): string {
  return iso(d)!;
}
