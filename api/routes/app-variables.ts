import * as yup from 'yup';
import { notFound } from '../problem';
import { recordAudit } from '../audit';
import { route } from '../route';
import { str, uuid } from '../schemas/common';
import {
  deleteSecretFile, deleteVariable, listSecretFiles, listVariables, secretFileSchema, setSecretFiles, setSecretFilesBody, setVariables, setVariablesBody, variableSchema,
} from '../variables';
import { assertChangeable, findApp } from './app-support';

const TAG = 'variables';
const ofApp = (uuid: string) => ({ kind: 'app' as const, uuid });

export const appVariableRoutes = [
  route<{ uuid: string }>({
    method: 'get', path: '/apps/{uuid}/variables', operation: 'apps.variables', tag: TAG,
    summary: 'List an app\'s environment variables (sealed at rest): key, secret flag, size and SHA-256 digest of each; the value only when not secret (null when secret)', response: yup.array(variableSchema),
    async handler(ctx) {
      return listVariables(ctx.deps.dataSource, ctx.deps.secretBox, ofApp((await findApp(ctx, ctx.params.uuid)).uuid));
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof setVariablesBody>>({
    method: 'put', path: '/apps/{uuid}/variables', operation: 'apps.variables', tag: TAG, audit: 'app.variables_set',
    summary: 'Set many environment variables at once (others keep their value); one marked secret: true is never returned again and stays secret when set later without the flag; they apply at the next deployment, and the app reads needs_redeploy until then',
    body: setVariablesBody, response: yup.array(variableSchema),
    async handler(ctx) {
      const app = await ctx.deps.dataSource.transaction(async (m) => {
        const app = await findApp(ctx, ctx.params.uuid, m, true);
        assertChangeable(app);
        const change = await setVariables(m, ctx.deps.secretBox, ofApp(app.uuid), ctx.body.variables);
        await recordAudit(m, ctx, { resourceUuid: app.uuid, ...change });
        return app;
      });
      return listVariables(ctx.deps.dataSource, ctx.deps.secretBox, ofApp(app.uuid));
    },
  }),
  route<{ uuid: string; key: string }>({
    method: 'delete', path: '/apps/{uuid}/variables/{key}', operation: 'apps.variables', tag: TAG, status: 204, audit: 'app.variable_delete',
    params: yup.object({ uuid: uuid().required(), key: str().max(255).required() }),
    summary: 'Remove an environment variable',
    async handler(ctx) {
      await ctx.deps.dataSource.transaction(async (m) => {
        const app = await findApp(ctx, ctx.params.uuid, m, true);
        assertChangeable(app);
        const change = await deleteVariable(m, ofApp(app.uuid), ctx.params.key);
        if (!change) throw notFound('variable');
        await recordAudit(m, ctx, { resourceUuid: app.uuid, ...change });
      });
      return undefined;
    },
  }),
  route<{ uuid: string }>({
    method: 'get', path: '/apps/{uuid}/secret_files', operation: 'apps.variables', tag: TAG,
    summary: 'List an app\'s secret files: names, sizes and SHA-256 digests, never the content', response: yup.array(secretFileSchema),
    async handler(ctx) {
      return listSecretFiles(ctx.deps.dataSource, ofApp((await findApp(ctx, ctx.params.uuid)).uuid));
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof setSecretFilesBody>>({
    method: 'put', path: '/apps/{uuid}/secret_files', operation: 'apps.variables', tag: TAG, audit: 'app.secret_files_set',
    summary: 'Set many secret files at once (mounted under /etc/secrets/<name>); the content is sealed and never returned',
    body: setSecretFilesBody, response: yup.array(secretFileSchema),
    async handler(ctx) {
      const app = await ctx.deps.dataSource.transaction(async (m) => {
        const app = await findApp(ctx, ctx.params.uuid, m, true);
        assertChangeable(app);
        const change = await setSecretFiles(m, ctx.deps.secretBox, ofApp(app.uuid), ctx.body.files);
        await recordAudit(m, ctx, { resourceUuid: app.uuid, ...change });
        return app;
      });
      return listSecretFiles(ctx.deps.dataSource, ofApp(app.uuid));
    },
  }),
  route<{ uuid: string; file_uuid: string }>({
    method: 'delete', path: '/apps/{uuid}/secret_files/{file_uuid}', operation: 'apps.variables', tag: TAG, status: 204, audit: 'app.secret_file_delete',
    summary: 'Remove a secret file',
    async handler(ctx) {
      await ctx.deps.dataSource.transaction(async (m) => {
        const app = await findApp(ctx, ctx.params.uuid, m, true);
        assertChangeable(app);
        const change = await deleteSecretFile(m, ofApp(app.uuid), ctx.params.file_uuid);
        if (!change) throw notFound('secret file');
        await recordAudit(m, ctx, { resourceUuid: app.uuid, ...change });
      });
      return undefined;
    },
  }),
];
