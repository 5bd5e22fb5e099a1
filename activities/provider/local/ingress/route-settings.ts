import type { DataSource } from 'typeorm';
import type { SecretBox } from '../../../../domain/secret-box';
import { one } from '../../../../entities/sql';
import { TtlCache } from './ttl-cache';

/** What the ingress needs to know about the app a host belongs to. */
export interface RouteSettings {
  appUuid: string;
  state: string;
  privateAccess: boolean;
  maintenance: boolean;
  /** Present when HTTP Basic auth is on (the password opened, kept in memory only). */
  basicAuth: { username: string; password: string } | null;
}

/** The routing columns of an app, as both ingresses read them. */
export interface AppRouteRow {
  uuid: string;
  state: string;
  private_access: boolean;
  maintenance: boolean;
  basic_auth_enabled: boolean;
  basic_auth_username: string | null;
  basic_auth_password_sealed: string | null;
}

const COLUMNS =
  'a.uuid, a.state, a.private_access, a.maintenance, a.basic_auth_enabled, a.basic_auth_username, a.basic_auth_password_sealed';

/**
 * The app answering at a host: its public URL host `<name>.<region domain>` (the region
 * of its compute resource, as `publicUrl` builds it) or one of its VERIFIED custom domains.
 */
const BY_HOST = `
  SELECT ${COLUMNS} FROM apps a
    JOIN compute_resources c ON c.uuid = a.resource_uuid
    JOIN regions g ON g.id = c.region_id
   WHERE a.name = $1 AND lower(g.domain) = $2
  UNION ALL
  SELECT ${COLUMNS} FROM domains d JOIN apps a ON a.uuid = d.app_uuid
   WHERE d.name = $3 AND d.verification_status = 'verified'
  LIMIT 1`;

/** The request's Host without its port, lower case ('' when absent). */
export function hostOf(header: string | undefined): string {
  const host = (header ?? '').trim().toLowerCase();
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  return host.replace(/:\d*$/, '').replace(/\.$/, '');
}

/**
 * Routing settings by host, read from the database and kept for `ttlMs` (unknown hosts
 * too), so the hot path is a map lookup and a change applies within `ttlMs`.
 */
export class RouteSettingsCache {
  private readonly cache: TtlCache<RouteSettings | null>;

  constructor(
    private readonly ds: DataSource,
    private readonly secretBox: SecretBox,
    ttlMs = 1000,
  ) {
    this.cache = new TtlCache(ttlMs);
  }

  lookup(host: string): Promise<RouteSettings | null> {
    return this.cache.get(host, (h) => this.load(h));
  }

  private async load(host: string): Promise<RouteSettings | null> {
    const dot = host.indexOf('.');
    if (!host || dot <= 0) return null;
    const row = await one<AppRouteRow>(this.ds, BY_HOST, [host.slice(0, dot), host.slice(dot + 1), host]);
    if (!row) return null;
    // apps_basic_auth (a CHECK constraint) guarantees both credentials when basic auth is on
    const auth =
      row.basic_auth_enabled && row.basic_auth_username && row.basic_auth_password_sealed
        ? { username: row.basic_auth_username, password: this.secretBox.open(row.basic_auth_password_sealed) }
        : null;
    return {
      appUuid: row.uuid,
      state: row.state,
      privateAccess: row.private_access,
      maintenance: row.maintenance,
      basicAuth: auth,
    };
  }
}
