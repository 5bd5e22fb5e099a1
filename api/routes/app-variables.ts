import { createHash, randomUUID } from 'node:crypto';
import * as yup from 'yup';
import { ENV_KEY, SECRET_FILE_NAME } from '../../domain/apps';
import { rows } from '../../entities/sql';
import { notFound, unprocessable } from '../problem';
import { route } from '../route';
import { arr, int, obj, str, timestamp, uuid } from '../schemas/common';
import { isoRequired } from '../views/common';
import { assertChangeable, findApp, type Ctx } from './app-support';

const TAG = 'variables';

const variableSchema = obj({ key: str().required(), value: str().defined(), created_at: timestamp().required(), updated_at: timestamp().required() });
const secretFileSchema = obj({ uuid: uuid().required(), name: str().required(), size_bytes: int().required(), sha256: str().required(), created_at: timestamp().required(), updated_at: timestamp().required() });

const setVariablesBody = obj({
  variables: arr(obj({
    key: str().max(255).matches(ENV_KEY, '${path} must be an environment variable name: letters, digits and _, not starting with a digit').required(),
    value: str().max(32 * 1024).defined(),
  }).required()).min(1).max(500).required(),
});
const setSecretFilesBody = obj({
  files: arr(obj({
    name: str().matches(SECRET_FILE_NAME, '${path} must be a file name: letters, digits, ., _ and -, not starting with a dot').required(),
    content: str().max(64 * 1024).defined(),
  }).required()).min(1).max(50).required(),
});

async function listVariables(ctx: Ctx, appUuid: string) {
  const found = await rows<{ key: string; value_sealed: string; created_at: Date; updated_at: Date }>(ctx.deps.dataSource,
    `SELECT key, value_sealed, created_at, updated_at FROM app_variables WHERE app_uuid = $1 ORDER BY key`, [appUuid]);
  return found.map((v) => ({ key: v.key, value: ctx.deps.secretBox.open(v.value_sealed), created_at: isoRequired(v.created_at), updated_at: isoRequired(v.updated_at) }));
}

/** Names, sizes and digests only: a secret file's content never leaves. */
async function listSecretFiles(ctx: Ctx, appUuid: string) {
  const found = await rows<{ uuid: string; name: string; size_bytes: number; sha256: string; created_at: Date; updated_at: Date }>(ctx.deps.dataSource,
    `SELECT uuid, name, size_bytes, sha256, created_at, updated_at FROM app_secret_files WHERE app_uuid = $1 ORDER BY name`, [appUuid]);
  return found.map((f) => ({ uuid: f.uuid, name: f.name, size_bytes: f.size_bytes, sha256: f.sha256, created_at: isoRequired(f.created_at), updated_at: isoRequired(f.updated_at) }));
}

export const appVariableRoutes = [
  route<{ uuid: string }>({
    method: 'get', path: '/apps/{uuid}/variables', operation: 'apps.variables', tag: TAG,
    summary: 'List an app\'s environment variables (sealed at rest)', response: yup.array(variableSchema),
    async handler(ctx) {
      return listVariables(ctx, (await findApp(ctx, ctx.params.uuid)).uuid);
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof setVariablesBody>>({
    method: 'put', path: '/apps/{uuid}/variables', operation: 'apps.variables', tag: TAG,
    summary: 'Set many environment variables at once (others keep their value); they apply at the next deployment or restart',
    body: setVariablesBody, response: yup.array(variableSchema),
    async handler(ctx) {
      const keys = ctx.body.variables.map((v) => v.key);
      const repeated = keys.filter((k, i) => keys.indexOf(k) !== i);
      if (repeated.length > 0) throw unprocessable(`variables repeat: ${[...new Set(repeated)].join(', ')}`, [{ path: 'body.variables', message: 'keys repeat' }]);
      const app = await ctx.deps.dataSource.transaction(async (m) => {
        const app = await findApp(ctx, ctx.params.uuid, m, true);
        assertChangeable(app);
        await m.query(
          `INSERT INTO app_variables (app_uuid, key, value_sealed) SELECT $1, k, v FROM unnest($2::text[], $3::text[]) AS t(k, v)
           ON CONFLICT (app_uuid, key) DO UPDATE SET value_sealed = EXCLUDED.value_sealed, updated_at = now()`,
          [app.uuid, keys, ctx.body.variables.map((v) => ctx.deps.secretBox.seal(v.value))]);
        return app;
      });
      return listVariables(ctx, app.uuid);
    },
  }),
  route<{ uuid: string; key: string }>({
    method: 'delete', path: '/apps/{uuid}/variables/{key}', operation: 'apps.variables', tag: TAG, status: 204,
    params: yup.object({ uuid: uuid().required(), key: str().max(255).required() }),
    summary: 'Remove an environment variable',
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      assertChangeable(app);
      if (!ENV_KEY.test(ctx.params.key)) throw notFound('variable');
      const deleted = await rows(ctx.deps.dataSource, `DELETE FROM app_variables WHERE app_uuid = $1 AND key = $2 RETURNING key`, [app.uuid, ctx.params.key]);
      if (deleted.length === 0) throw notFound('variable');
      return undefined;
    },
  }),
  route<{ uuid: string }>({
    method: 'get', path: '/apps/{uuid}/secret_files', operation: 'apps.variables', tag: TAG,
    summary: 'List an app\'s secret files: names, sizes and SHA-256 digests, never the content', response: yup.array(secretFileSchema),
    async handler(ctx) {
      return listSecretFiles(ctx, (await findApp(ctx, ctx.params.uuid)).uuid);
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof setSecretFilesBody>>({
    method: 'put', path: '/apps/{uuid}/secret_files', operation: 'apps.variables', tag: TAG,
    summary: 'Set many secret files at once (mounted under /etc/secrets/<name>); the content is sealed and never returned',
    body: setSecretFilesBody, response: yup.array(secretFileSchema),
    async handler(ctx) {
      const names = ctx.body.files.map((f) => f.name);
      if (new Set(names).size !== names.length) throw unprocessable('secret file names repeat', [{ path: 'body.files', message: 'names repeat' }]);
      const app = await ctx.deps.dataSource.transaction(async (m) => {
        const app = await findApp(ctx, ctx.params.uuid, m, true);
        assertChangeable(app);
        for (const f of ctx.body.files) {
          const bytes = Buffer.from(f.content, 'utf8');
          await m.query(
            `INSERT INTO app_secret_files (uuid, app_uuid, name, content_sealed, size_bytes, sha256) VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (app_uuid, name) DO UPDATE SET content_sealed = EXCLUDED.content_sealed, size_bytes = EXCLUDED.size_bytes,
               sha256 = EXCLUDED.sha256, updated_at = now()`,
            [randomUUID(), app.uuid, f.name, ctx.deps.secretBox.seal(f.content), bytes.length, createHash('sha256').update(bytes).digest('hex')]);
        }
        return app;
      });
      return listSecretFiles(ctx, app.uuid);
    },
  }),
  route<{ uuid: string; file_uuid: string }>({
    method: 'delete', path: '/apps/{uuid}/secret_files/{file_uuid}', operation: 'apps.variables', tag: TAG, status: 204,
    summary: 'Remove a secret file',
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      assertChangeable(app);
      const deleted = await rows(ctx.deps.dataSource, `DELETE FROM app_secret_files WHERE app_uuid = $1 AND uuid = $2 RETURNING uuid`, [app.uuid, ctx.params.file_uuid]);
      if (deleted.length === 0) throw notFound('secret file');
      return undefined;
    },
  }),
];
