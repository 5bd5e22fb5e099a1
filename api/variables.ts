import { createHash, randomUUID } from 'node:crypto';
import * as yup from 'yup';
import { ENV_KEY, SECRET_FILE_NAME } from '../domain/apps';
import type { EntityManager } from 'typeorm';
import { App } from '../entities/app';
import type { Db } from '../entities/sql';
import { rows } from '../entities/sql';
import type { SecretBox } from '../domain/secret-box';
import { unprocessable } from './problem';
import { arr, bool, int, obj, str, timestamp, uuid } from './schemas/common';
import { isoRequired } from './views/common';

/**
 * Variables and secret files of an app or of a project: one shape, one code path. Values
 * and contents are sealed with the secret box; a secret file's content and a secret
 * variable's value never leave (names, sizes and digests only). A change marks the affected
 * apps as needing a redeploy.
 */
export type VariableOwner = { kind: 'app' | 'project'; uuid: string };

const tables = (o: VariableOwner) => ({
  variables: `${o.kind}_variables`,
  files: `${o.kind}_secret_files`,
  column: `${o.kind}_uuid`,
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

export const variableSchema = obj({
  key: str().required(),
  secret: yup.boolean().strict().required(),
  value: str()
    .nullable()
    .defined()
    .meta({
      jsonSchema: {
        description:
          'The value; null when the variable is secret (its value is never returned: key, size and digest only)',
      },
    } as never),
  size_bytes: int().required(),
  sha256: str().required(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
});
export const secretFileSchema = obj({
  uuid: uuid().required(),
  name: str().required(),
  size_bytes: int().required(),
  sha256: str().required(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
});

export const setVariablesBody = obj({
  variables: arr(
    obj({
      key: str()
        .max(255)
        .matches(
          ENV_KEY,
          '${path} must be an environment variable name: letters, digits and _, not starting with a digit',
        )
        .required(),
      value: str()
        .max(32 * 1024)
        .defined(),
      secret: bool(),
    }).required(),
  )
    .min(1)
    .max(500)
    .required(),
});
export const setSecretFilesBody = obj({
  files: arr(
    obj({
      name: str()
        .matches(SECRET_FILE_NAME, '${path} must be a file name: letters, digits, ., _ and -, not starting with a dot')
        .required(),
      content: str()
        .max(64 * 1024)
        .defined(),
    }).required(),
  )
    .min(1)
    .max(50)
    .required(),
});

/**
 * What a write changed, for its audit entry: keys and names, the kind of each variable,
 * file sizes and digests, and the sealed forms under `*_sealed` fields (which the audit
 * diff redacts). Never a value or a file content.
 */
export interface VariablesChange {
  before: Record<string, unknown>;
  after: Record<string, unknown>;
}

type VariableRow = { key: string; value_sealed: string; secret: boolean };
type FileRow = { uuid: string; name: string; content_sealed: string; size_bytes: number; sha256: string };

function variableFields(v: VariableRow, sealed = v.value_sealed): Record<string, unknown> {
  return { [`variables.${v.key}`]: v.secret ? 'secret' : 'plain', [`variables.${v.key}.value_sealed`]: sealed };
}

function fileFields(f: FileRow, sealed = f.content_sealed): Record<string, unknown> {
  return {
    [`files.${f.name}`]: { uuid: f.uuid, size_bytes: f.size_bytes, sha256: f.sha256 },
    [`files.${f.name}.content_sealed`]: sealed,
  };
}

/** Every variable by key: a secret one's value is null (its size and digest still show). */
export async function listVariables(db: Db, box: SecretBox, owner: VariableOwner) {
  const t = tables(owner);
  const found = await rows<VariableRow & { created_at: Date; updated_at: Date }>(
    db,
    `SELECT key, value_sealed, secret, created_at, updated_at FROM ${t.variables} WHERE ${t.column} = $1 ORDER BY key`,
    [owner.uuid],
  );
  return found.map((v) => {
    const value = box.open(v.value_sealed);
    const bytes = Buffer.from(value, 'utf8');
    return {
      key: v.key,
      secret: v.secret,
      value: v.secret ? null : value,
      size_bytes: bytes.length,
      sha256: sha256(bytes),
      created_at: isoRequired(v.created_at),
      updated_at: isoRequired(v.updated_at),
    };
  });
}

/** Names, sizes and digests only: a secret file's content never leaves. */
export async function listSecretFiles(db: Db, owner: VariableOwner) {
  const t = tables(owner);
  const found = await rows<{
    uuid: string;
    name: string;
    size_bytes: number;
    sha256: string;
    created_at: Date;
    updated_at: Date;
  }>(
    db,
    `SELECT uuid, name, size_bytes, sha256, created_at, updated_at FROM ${t.files} WHERE ${t.column} = $1 ORDER BY name`,
    [owner.uuid],
  );
  return found.map((f) => ({
    uuid: f.uuid,
    name: f.name,
    size_bytes: f.size_bytes,
    sha256: f.sha256,
    created_at: isoRequired(f.created_at),
    updated_at: isoRequired(f.updated_at),
  }));
}

/** Marks the apps whose environment the owner feeds as needing a redeploy (not restarted). */
export async function markNeedsRedeploy(m: EntityManager, owner: VariableOwner): Promise<void> {
  await m
    .createQueryBuilder()
    .update(App)
    // the mark is not a change of the app's settings: updated_at stays
    .set({ needs_redeploy_since: () => 'COALESCE(needs_redeploy_since, now())', updated_at: () => 'updated_at' })
    .where(`${owner.kind === 'app' ? 'uuid' : 'project_uuid'} = :owner`, { owner: owner.uuid })
    .execute();
}

/**
 * Sets variables (others keep theirs). A variable once secret stays secret: its flag becomes
 * old OR new, so omitting `secret` on a later write never makes a hidden value readable.
 */
export async function setVariables(
  db: EntityManager,
  box: SecretBox,
  owner: VariableOwner,
  variables: Array<{ key: string; value: string; secret?: boolean | undefined }>,
): Promise<VariablesChange> {
  const keys = variables.map((v) => v.key);
  const repeated = keys.filter((k, i) => keys.indexOf(k) !== i);
  if (repeated.length > 0)
    throw unprocessable(`variables repeat: ${[...new Set(repeated)].join(', ')}`, [
      { path: 'body.variables', message: 'keys repeat' },
    ]);
  const t = tables(owner);
  const old = await rows<VariableRow>(
    db,
    `SELECT key, value_sealed, secret FROM ${t.variables} WHERE ${t.column} = $1 AND key = ANY($2::text[]) FOR UPDATE`,
    [owner.uuid, keys],
  );
  // raw: one statement for the app and the project tables (no project entity), a batch from unnest, and an
  // upsert whose secret flag is old OR new (an expression of both rows, which the query builder's orUpdate cannot say)
  const written = await rows<VariableRow>(
    db,
    `INSERT INTO ${t.variables} AS t (${t.column}, key, value_sealed, secret)
       SELECT $1, k, v, s FROM unnest($2::text[], $3::text[], $4::boolean[]) AS u(k, v, s)
     ON CONFLICT (${t.column}, key) DO UPDATE SET value_sealed = EXCLUDED.value_sealed, secret = t.secret OR EXCLUDED.secret, updated_at = now()
     RETURNING key, value_sealed, secret`,
    [owner.uuid, keys, variables.map((v) => box.seal(v.value)), variables.map((v) => v.secret === true)],
  );
  await markNeedsRedeploy(db, owner);
  const values = new Map(variables.map((v) => [v.key, v.value]));
  const change: VariablesChange = { before: {}, after: {} };
  for (const w of written) {
    const was = old.find((o) => o.key === w.key);
    const sameValue = was !== undefined && box.open(was.value_sealed) === values.get(w.key);
    if (was) Object.assign(change.before, variableFields(was));
    // an unchanged value shows no change (its new sealed form differs only by its nonce)
    Object.assign(change.after, variableFields(w, sameValue ? was.value_sealed : w.value_sealed));
  }
  return change;
}

export async function setSecretFiles(
  db: EntityManager,
  box: SecretBox,
  owner: VariableOwner,
  files: Array<{ name: string; content: string }>,
): Promise<VariablesChange> {
  const names = files.map((f) => f.name);
  if (new Set(names).size !== names.length)
    throw unprocessable('secret file names repeat', [{ path: 'body.files', message: 'names repeat' }]);
  const t = tables(owner);
  const old = await rows<FileRow>(
    db,
    `SELECT uuid, name, content_sealed, size_bytes, sha256 FROM ${t.files} WHERE ${t.column} = $1 AND name = ANY($2::text[]) FOR UPDATE`,
    [owner.uuid, names],
  );
  const change: VariablesChange = { before: {}, after: {} };
  for (const f of files) {
    const bytes = Buffer.from(f.content, 'utf8');
    // raw: one statement for the app and the project tables (no project entity), an upsert returning the row as written
    const [w] = await rows<FileRow>(
      db,
      `INSERT INTO ${t.files} (uuid, ${t.column}, name, content_sealed, size_bytes, sha256) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (${t.column}, name) DO UPDATE SET content_sealed = EXCLUDED.content_sealed, size_bytes = EXCLUDED.size_bytes,
         sha256 = EXCLUDED.sha256, updated_at = now()
       RETURNING uuid, name, content_sealed, size_bytes, sha256`,
      [randomUUID(), owner.uuid, f.name, box.seal(f.content), bytes.length, sha256(bytes)],
    );
    const was = old.find((o) => o.name === f.name);
    if (was) Object.assign(change.before, fileFields(was));
    Object.assign(
      change.after,
      fileFields(w!, was && was.sha256 === w!.sha256 ? was.content_sealed : w!.content_sealed),
    );
  }
  await markNeedsRedeploy(db, owner);
  return change;
}

/** Removes a variable; null when there was none of that key, else what it removed. */
export async function deleteVariable(
  db: EntityManager,
  owner: VariableOwner,
  key: string,
): Promise<VariablesChange | null> {
  if (!ENV_KEY.test(key)) return null;
  const t = tables(owner);
  // raw: one statement for the app and the project tables (no project entity)
  const [deleted] = await rows<VariableRow>(
    db,
    `DELETE FROM ${t.variables} WHERE ${t.column} = $1 AND key = $2 RETURNING key, value_sealed, secret`,
    [owner.uuid, key],
  );
  if (!deleted) return null;
  await markNeedsRedeploy(db, owner);
  return { before: variableFields(deleted), after: {} };
}

/** Removes a secret file; null when the owner has none of that uuid, else what it removed. */
export async function deleteSecretFile(
  db: EntityManager,
  owner: VariableOwner,
  fileUuid: string,
): Promise<VariablesChange | null> {
  const t = tables(owner);
  // raw: one statement for the app and the project tables (no project entity)
  const [deleted] = await rows<FileRow>(
    db,
    `DELETE FROM ${t.files} WHERE ${t.column} = $1 AND uuid = $2 RETURNING uuid, name, content_sealed, size_bytes, sha256`,
    [owner.uuid, fileUuid],
  );
  if (!deleted) return null;
  await markNeedsRedeploy(db, owner);
  return { before: fileFields(deleted), after: {} };
}
