import { DEFAULT_PORTS, type DataType } from './data';

const SCHEMES: Record<string, string> = { postgres: 'postgresql', mysql: 'mysql', valkey: 'redis' };

/** What an add-on's connection is made of (the password already opened by the caller). */
export interface ConnectionInput {
  type: string;
  name: string;
  settings: Record<string, unknown>;
  username: string | null;
  database_name: string | null;
  password: string | null;
  public_access: boolean;
  region_domain: string;
  /** Where the driver really serves it (the local driver records it); absent: the cluster's internal name and the engine's port. */
  endpoint?: { host: string; port: number; public_host: string } | null;
}

export interface AddonConnection {
  /** The connection environment variables (the contract's `var`), which an app using the add-on also gets. */
  var: Record<string, string>;
  connection_details: {
    internal: {
      hostname: string;
      database: string | null;
      username: string | null;
      password: string | null;
      connection_url: string;
      port: number;
    };
    external: { external_connection_url: string | null; psql_command: string | null };
  } | null;
}

/**
 * An add-on's connection details and `var`. Storage volumes and cron jobs have no
 * connection details (a volume's `var` names it and its sub_path).
 */
export function addonConnection(a: ConnectionInput): AddonConnection {
  const scheme = SCHEMES[a.type];
  if (!scheme) {
    const vars =
      a.type === 'storage'
        ? { STORAGE_VOLUME: a.name, ...(a.settings.sub_path ? { STORAGE_SUB_PATH: String(a.settings.sub_path) } : {}) }
        : {};
    return { var: vars, connection_details: null };
  }
  const { password } = a;
  const port = a.endpoint?.port ?? DEFAULT_PORTS[a.type as DataType];
  const hostname = a.endpoint?.host ?? `${a.name}.internal`;
  const user = a.username ?? 'default';
  const db = a.database_name;
  const auth = `${encodeURIComponent(user)}:${encodeURIComponent(password ?? '')}@`;
  const path = db ? `/${db}` : '';
  const connectionUrl = `${scheme}://${auth}${hostname}:${port}${path}`;
  const externalHost = a.endpoint?.public_host ?? `${a.name}.db.${a.region_domain}`;
  const externalUrl = a.public_access ? `${scheme}://${auth}${externalHost}:${port}${path}` : null;
  const psql = a.public_access && a.type === 'postgres' ? `psql "${externalUrl}"` : null;
  const vars: Record<string, string> =
    a.type === 'postgres'
      ? {
          DATABASE_URL: connectionUrl,
          PGHOST: hostname,
          PGPORT: String(port),
          PGUSER: user,
          PGPASSWORD: password ?? '',
          PGDATABASE: db ?? '',
        }
      : a.type === 'mysql'
        ? {
            MYSQL_URL: connectionUrl,
            MYSQL_HOST: hostname,
            MYSQL_PORT: String(port),
            MYSQL_USER: user,
            MYSQL_PASSWORD: password ?? '',
            MYSQL_DATABASE: db ?? '',
          }
        : {
            REDIS_URL: connectionUrl,
            VALKEY_URL: connectionUrl,
            VALKEY_HOST: hostname,
            VALKEY_PORT: String(port),
            VALKEY_PASSWORD: password ?? '',
          };
  return {
    var: vars,
    connection_details: {
      internal: { hostname, database: db, username: user, password, connection_url: connectionUrl, port },
      external: { external_connection_url: externalUrl, psql_command: psql },
    },
  };
}
