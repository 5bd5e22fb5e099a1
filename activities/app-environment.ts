import type { SecretBox } from '../domain/secret-box';
import type { Db } from '../entities/sql';
import { rows } from '../entities/sql';

/**
 * The effective environment of an app: its project's variables overlaid by its own (an
 * app's key wins over the project's). Opened inside the activity that hands it to the data
 * plane; never a workflow argument or result.
 */
export async function effectiveEnvironment(db: Db, box: SecretBox, appUuid: string): Promise<Record<string, string>> {
  const found = await rows<{ key: string; value_sealed: string; own: boolean }>(db,
    `SELECT v.key, v.value_sealed, false AS own FROM apps a JOIN project_variables v ON v.project_uuid = a.project_id WHERE a.uuid = $1
     UNION ALL
     SELECT key, value_sealed, true AS own FROM app_variables WHERE app_uuid = $1`, [appUuid]);
  const env: Record<string, string> = {};
  for (const v of found.filter((r) => !r.own)) env[v.key] = box.open(v.value_sealed);
  for (const v of found.filter((r) => r.own)) env[v.key] = box.open(v.value_sealed);
  return env;
}
