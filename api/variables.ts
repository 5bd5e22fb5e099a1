import { createHash, randomUUID } from 'node:crypto';
import { ENV_KEY, SECRET_FILE_NAME } from '../domain/apps';
import type { Db } from '../entities/sql';
import { rows } from '../entities/sql';
import type { SecretBox } from '../domain/secret-box';
import { unprocessable } from './problem';
import { arr, int, obj, str, timestamp, uuid } from './schemas/common';
import { isoRequired } from './views/common';

/**
 * Variables and secret files of an app or of a project: one shape, one code path. Values
 * and contents are sealed with the secret box; a secret file's content never leaves (names,
 * sizes and digests only). A change marks the affected apps as needing a redeploy.
 */
export type VariableOwner = { kind: 'app' | 'project'; uuid: string };

const tables = (o: VariableOwner) => ({ variables: `${o.kind}_variables`, files: `${o.kind}_secret_files`, column: `${o.kind}_uuid` });

export const variableSchema = obj({ key: str().required(), value: str().defined(), created_at: timestamp().required(), updated_at: timestamp().required() });
export const secretFileSchema = obj({ uuid: uuid().required(), name: str().required(), size_bytes: int().required(), sha256: str().required(), created_at: timestamp().required(), updated_at: timestamp().required() });

export const setVariablesBody = obj({
  variables: arr(obj({
    key: str().max(255).matches(ENV_KEY, '${path} must be an environment variable name: letters, digits and _, not starting with a digit').required(),
    value: str().max(32 * 1024).defined(),
  }).required()).min(1).max(500).required(),
});
export const setSecretFilesBody = obj({
  files: arr(obj({
    name: str().matches(SECRET_FILE_NAME, '${path} must be a file name: letters, digits, ., _ and -, not starting with a dot').required(),
    content: str().max(64 * 1024).defined(),
  }).required()).min(1).max(50).required(),
});

export async function listVariables(db: Db, box: SecretBox, owner: VariableOwner) {
  const t = tables(owner);
  const found = await rows<{ key: string; value_sealed: string; created_at: Date; updated_at: Date }>(db,
    `SELECT key, value_sealed, created_at, updated_at FROM ${t.variables} WHERE ${t.column} = $1 ORDER BY key`, [owner.uuid]);
  return found.map((v) => ({ key: v.key, value: box.open(v.value_sealed), created_at: isoRequired(v.created_at), updated_at: isoRequired(v.updated_at) }));
}

/** Names, sizes and digests only: a secret file's content never leaves. */
export async function listSecretFiles(db: Db, owner: VariableOwner) {
  const t = tables(owner);
  const found = await rows<{ uuid: string; name: string; size_bytes: number; sha256: string; created_at: Date; updated_at: Date }>(db,
    `SELECT uuid, name, size_bytes, sha256, created_at, updated_at FROM ${t.files} WHERE ${t.column} = $1 ORDER BY name`, [owner.uuid]);
  return found.map((f) => ({ uuid: f.uuid, name: f.name, size_bytes: f.size_bytes, sha256: f.sha256, created_at: isoRequired(f.created_at), updated_at: isoRequired(f.updated_at) }));
}

/** Marks the apps whose environment the owner feeds as needing a redeploy (not restarted). */
export async function markNeedsRedeploy(db: Db, owner: VariableOwner): Promise<void> {
  await db.query(`UPDATE apps SET needs_redeploy_since = COALESCE(needs_redeploy_since, now()) WHERE ${owner.kind === 'app' ? 'uuid' : 'project_id'} = $1`, [owner.uuid]);
}

export async function setVariables(db: Db, box: SecretBox, owner: VariableOwner, variables: Array<{ key: string; value: string }>): Promise<void> {
  const keys = variables.map((v) => v.key);
  const repeated = keys.filter((k, i) => keys.indexOf(k) !== i);
  if (repeated.length > 0) throw unprocessable(`variables repeat: ${[...new Set(repeated)].join(', ')}`, [{ path: 'body.variables', message: 'keys repeat' }]);
  const t = tables(owner);
  await db.query(
    `INSERT INTO ${t.variables} (${t.column}, key, value_sealed) SELECT $1, k, v FROM unnest($2::text[], $3::text[]) AS t(k, v)
     ON CONFLICT (${t.column}, key) DO UPDATE SET value_sealed = EXCLUDED.value_sealed, updated_at = now()`,
    [owner.uuid, keys, variables.map((v) => box.seal(v.value))]);
  await markNeedsRedeploy(db, owner);
}

export async function setSecretFiles(db: Db, box: SecretBox, owner: VariableOwner, files: Array<{ name: string; content: string }>): Promise<void> {
  const names = files.map((f) => f.name);
  if (new Set(names).size !== names.length) throw unprocessable('secret file names repeat', [{ path: 'body.files', message: 'names repeat' }]);
  const t = tables(owner);
  for (const f of files) {
    const bytes = Buffer.from(f.content, 'utf8');
    await db.query(
      `INSERT INTO ${t.files} (uuid, ${t.column}, name, content_sealed, size_bytes, sha256) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (${t.column}, name) DO UPDATE SET content_sealed = EXCLUDED.content_sealed, size_bytes = EXCLUDED.size_bytes,
         sha256 = EXCLUDED.sha256, updated_at = now()`,
      [randomUUID(), owner.uuid, f.name, box.seal(f.content), bytes.length, createHash('sha256').update(bytes).digest('hex')]);
  }
  await markNeedsRedeploy(db, owner);
}

/** Removes a variable; false when there was none of that key. */
export async function deleteVariable(db: Db, owner: VariableOwner, key: string): Promise<boolean> {
  if (!ENV_KEY.test(key)) return false;
  const t = tables(owner);
  const deleted = await rows(db, `DELETE FROM ${t.variables} WHERE ${t.column} = $1 AND key = $2 RETURNING key`, [owner.uuid, key]);
  if (deleted.length > 0) await markNeedsRedeploy(db, owner);
  return deleted.length > 0;
}

export async function deleteSecretFile(db: Db, owner: VariableOwner, fileUuid: string): Promise<boolean> {
  const t = tables(owner);
  const deleted = await rows(db, `DELETE FROM ${t.files} WHERE ${t.column} = $1 AND uuid = $2 RETURNING uuid`, [owner.uuid, fileUuid]);
  if (deleted.length > 0) await markNeedsRedeploy(db, owner);
  return deleted.length > 0;
}
