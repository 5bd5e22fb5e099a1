/**
 * Values kept for `ttlMs` after they were loaded (misses too: a load answering null is kept
 * like any value), so a hot path is a map lookup and a change in the source shows within
 * `ttlMs`. Concurrent misses for one key share one load; a failed load is not kept.
 */
export class TtlCache<T> {
  private readonly entries = new Map<string, { at: number; value: Promise<T> }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(key: string, load: (key: string) => Promise<T>): Promise<T> {
    const now = Date.now();
    const hit = this.entries.get(key);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    const value = load(key);
    this.entries.set(key, { at: now, value });
    value.catch(() => this.entries.delete(key));
    if (this.entries.size > this.maxEntries) {
      for (const [k, entry] of this.entries) if (now - entry.at >= this.ttlMs) this.entries.delete(k);
    }
    return value;
  }
}
