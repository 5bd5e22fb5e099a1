import { Client } from 'pg';
import type { Logger } from 'pino';

/** The channel the triggers of migration 1733300000000-auth-notify notify on. */
export const AUTH_CHANNEL = 'berth_auth';
/** The longest a cached token lookup is used, even if a notification were lost. */
export const MAX_STALENESS_MS = 1000;
const MAX_ENTRIES = 10_000;
const RECONNECT_MS = 1000;

/**
 * What the token lookup read, per (token hash, selected workspace), for at most
 * MAX_STALENESS_MS. It holds rows, not decisions: every check (revoked, expired, the
 * workspace, the membership, the permissions) runs on each request against them
 * (api/middleware/auth.ts). Revocation is immediate: the database notifies AUTH_CHANNEL
 * from any transaction that changes a token, a membership or a role, on commit, and every
 * API process listening drops all it holds. Entries are served only while the LISTEN
 * connection is up (taken lazily, so a process that serves no API opens none); a lookup
 * that started before a notification never fills the cache.
 */
export class TokenCache<Row> {
  private readonly entries = new Map<string, { row: Row; at: number }>();
  private client: Client | null = null;
  private listening = false;
  private closed = false;
  private starting = false;
  private retry: NodeJS.Timeout | null = null;
  /** Bumped by every invalidation: a lookup that saw another generation does not fill the cache. */
  private generation = 0;

  constructor(
    private readonly databaseUrl: string,
    private readonly logger?: Logger,
  ) {}

  /** A fresh entry, or undefined (also while not listening). */
  get(key: string): Row | undefined {
    if (!this.listening) {
      this.start();
      return undefined;
    }
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (Date.now() - entry.at >= MAX_STALENESS_MS) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.row;
  }

  /** The generation to pass to `set` with the row a lookup read. */
  get current(): number {
    return this.generation;
  }

  set(key: string, row: Row, generation: number): void {
    if (!this.listening || generation !== this.generation) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(key, { row, at: Date.now() });
  }

  invalidate(): void {
    this.generation++;
    this.entries.clear();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    this.stopListening();
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }

  private start(): void {
    if (this.starting || this.closed || this.retry) return;
    this.starting = true;
    const client = new Client({ connectionString: this.databaseUrl, application_name: 'berth token cache' });
    const lost = (err?: Error) => {
      if (this.client !== client) return;
      this.client = null;
      this.stopListening();
      if (this.closed) return;
      this.logger?.warn(
        { err },
        'token cache: LISTEN connection lost; looking tokens up on every request until it is back',
      );
      this.retry = setTimeout(() => {
        this.retry = null;
      }, RECONNECT_MS);
      this.retry.unref();
      void client.end().catch(() => {});
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', () => this.invalidate());
    this.client = client;
    client
      .connect()
      .then(() => client.query(`LISTEN ${AUTH_CHANNEL}`))
      .then(
        () => {
          this.starting = false;
          if (this.client !== client) return;
          if (this.closed) {
            void client.end().catch(() => {});
            return;
          }
          this.invalidate();
          this.listening = true;
        },
        (err: Error) => {
          this.starting = false;
          lost(err);
        },
      );
  }

  private stopListening(): void {
    this.listening = false;
    this.invalidate();
  }
}
