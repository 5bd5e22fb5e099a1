import * as yup from 'yup';
import { conflict, notFound } from '../problem';
import { recordAudit } from '../audit';
import { route } from '../route';
import { str, uuid } from '../schemas/common';
import {
  deleteSecretFile, deleteVariable, listSecretFiles, listVariables, secretFileSchema, setSecretFiles, setSecretFilesBody, setVariables, setVariablesBody, variableSchema,
} from '../variables';
import type { EntityManager } from 'typeorm';
import { findProject } from './projects';

/** The project (404 when absent or closed to the caller); a project being deleted takes no changes. */
async function changeableProject(ctx: Parameters<typeof findProject>[0], m: EntityManager) {
  const project = await findProject(ctx, ctx.params.uuid, m);
  if (project.state === 'deleting') throw conflict('the project is being deleted');
  await m.query(`SELECT 1 FROM projects WHERE uuid = $1 FOR UPDATE`, [project.uuid]);
  return project;
}

const TAG = 'variables';
const ofProject = (uuid: string) => ({ kind: 'project' as const, uuid });

export const projectVariableRoutes = [
  route<{ uuid: string }>({
    method: 'get', path: '/projects/{uuid}/variables', operation: 'projects.variables', tag: TAG,
    summary: 'List a project\'s environment variables (sealed at rest): key, secret flag, size and SHA-256 digest of each; the value only when not secret (null when secret)', response: yup.array(variableSchema),
    async handler(ctx) {
      return listVariables(ctx.deps.dataSource, ctx.deps.secretBox, ofProject((await findProject(ctx, ctx.params.uuid)).uuid));
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof setVariablesBody>>({
    method: 'put', path: '/projects/{uuid}/variables', operation: 'projects.variables', tag: TAG, audit: 'project.variables_set',
    summary: 'Set many environment variables at once (others keep their value); one marked secret: true is never returned again and stays secret when set later without the flag; every app of the project uses them (its own override them) from its next deployment, and reads needs_redeploy until then',
    body: setVariablesBody, response: yup.array(variableSchema),
    async handler(ctx) {
      const project = await ctx.deps.dataSource.transaction(async (m) => {
        const project = await changeableProject(ctx, m);
        const change = await setVariables(m, ctx.deps.secretBox, ofProject(project.uuid), ctx.body.variables);
        await recordAudit(m, ctx, { resourceUuid: project.uuid, ...change });
        return project;
      });
      return listVariables(ctx.deps.dataSource, ctx.deps.secretBox, ofProject(project.uuid));
    },
  }),
  route<{ uuid: string; key: string }>({
    method: 'delete', path: '/projects/{uuid}/variables/{key}', operation: 'projects.variables', tag: TAG, status: 204, audit: 'project.variable_delete',
    params: yup.object({ uuid: uuid().required(), key: str().max(255).required() }),
    summary: 'Remove an environment variable',
    async handler(ctx) {
      await ctx.deps.dataSource.transaction(async (m) => {
        const project = await changeableProject(ctx, m);
        const change = await deleteVariable(m, ofProject(project.uuid), ctx.params.key);
        if (!change) throw notFound('variable');
        await recordAudit(m, ctx, { resourceUuid: project.uuid, ...change });
      });
      return undefined;
    },
  }),
  route<{ uuid: string }>({
    method: 'get', path: '/projects/{uuid}/secret_files', operation: 'projects.variables', tag: TAG,
    summary: 'List a project\'s secret files: names, sizes and SHA-256 digests, never the content', response: yup.array(secretFileSchema),
    async handler(ctx) {
      return listSecretFiles(ctx.deps.dataSource, ofProject((await findProject(ctx, ctx.params.uuid)).uuid));
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof setSecretFilesBody>>({
    method: 'put', path: '/projects/{uuid}/secret_files', operation: 'projects.variables', tag: TAG, audit: 'project.secret_files_set',
    summary: 'Set many secret files at once (mounted in every app of the project under /etc/secrets/<name>, unless the app has its own of that name); the content is sealed and never returned',
    body: setSecretFilesBody, response: yup.array(secretFileSchema),
    async handler(ctx) {
      const project = await ctx.deps.dataSource.transaction(async (m) => {
        const project = await changeableProject(ctx, m);
        const change = await setSecretFiles(m, ctx.deps.secretBox, ofProject(project.uuid), ctx.body.files);
        await recordAudit(m, ctx, { resourceUuid: project.uuid, ...change });
        return project;
      });
      return listSecretFiles(ctx.deps.dataSource, ofProject(project.uuid));
    },
  }),
  route<{ uuid: string; file_uuid: string }>({
    method: 'delete', path: '/projects/{uuid}/secret_files/{file_uuid}', operation: 'projects.variables', tag: TAG, status: 204, audit: 'project.secret_file_delete',
    summary: 'Remove a secret file',
    async handler(ctx) {
      await ctx.deps.dataSource.transaction(async (m) => {
        const project = await changeableProject(ctx, m);
        const change = await deleteSecretFile(m, ofProject(project.uuid), ctx.params.file_uuid);
        if (!change) throw notFound('secret file');
        await recordAudit(m, ctx, { resourceUuid: project.uuid, ...change });
      });
      return undefined;
    },
  }),
];
