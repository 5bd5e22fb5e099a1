import { addonConnection } from '../domain/addon-connection';
import type { SecretBox } from '../domain/secret-box';
import type { Db } from '../entities/sql';
import { rows } from '../entities/sql';

/**
 * The connection variables (`var`) of the add-ons an app uses: its own add-ons (no cron
 * jobs, no read replicas, none being deleted), oldest first; on a key two of them define,
 * the older add-on keeps it, so adding a second database never repoints DATABASE_URL.
 */
async function addonVariables(db: Db, box: SecretBox, appUuid: string): Promise<Record<string, string>> {
  const addons = await rows<{
    type: string;
    name: string;
    settings: Record<string, unknown>;
    username: string | null;
    database_name: string | null;
    password_sealed: string | null;
    public_access: boolean;
    endpoint: { host: string; port: number; public_host: string } | null;
  }>(
    db,
    `SELECT type, name, settings, username, database_name, password_sealed, public_access, endpoint FROM addons
      WHERE app_uuid = $1 AND kind = 'addon' AND type <> 'cronjob' AND replica_of IS NULL AND state <> 'deleting'
      ORDER BY created_at, uuid`,
    [appUuid],
  );
  const env: Record<string, string> = {};
  for (const a of addons) {
    const { var: vars } = addonConnection({
      ...a,
      password: a.password_sealed ? box.open(a.password_sealed) : null,
      region_domain: '',
    });
    for (const [k, v] of Object.entries(vars)) if (!(k in env)) env[k] = v;
  }
  return env;
}

/**
 * The effective environment of an app: its add-ons' connection variables, overlaid by its
 * project's variables, overlaid by its own (a key set by the user wins). Opened inside the
 * activity that hands it to the data plane; never a workflow argument or result.
 */
export async function effectiveEnvironment(db: Db, box: SecretBox, appUuid: string): Promise<Record<string, string>> {
  const found = await rows<{ key: string; value_sealed: string; own: boolean }>(
    db,
    `SELECT v.key, v.value_sealed, false AS own FROM apps a JOIN project_variables v ON v.project_uuid = a.project_uuid WHERE a.uuid = $1
     UNION ALL
     SELECT key, value_sealed, true AS own FROM app_variables WHERE app_uuid = $1`,
    [appUuid],
  );
  const env: Record<string, string> = await addonVariables(db, box, appUuid);
  for (const v of found.filter((r) => !r.own)) env[v.key] = box.open(v.value_sealed);
  for (const v of found.filter((r) => r.own)) env[v.key] = box.open(v.value_sealed);
  return env;
}
