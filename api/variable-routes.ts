import * as yup from 'yup';
import type { EntityManager } from 'typeorm';
import type { RequirementKey } from '../domain/permissions';
import { write as auditedWrite } from './commands/audited-write';
import { notFound } from './problem';
import { route, type RouteContext, type RouteDef } from './route';
import { str, uuid } from './schemas/common';
import {
  deleteSecretFile,
  deleteVariable,
  listSecretFiles,
  listVariables,
  secretFileSchema,
  setSecretFiles,
  setSecretFilesBody,
  setVariables,
  setVariablesBody,
  variableSchema,
  type VariableOwner,
  type VariablesChange,
} from './variables';

type Ctx = RouteContext<{ uuid: string }, unknown, unknown>;

/** What differs between the variables routes of apps and of projects. */
export interface VariableOwnerRoutes {
  kind: VariableOwner['kind'];
  /** `/apps/{uuid}` or `/projects/{uuid}`. */
  base: string;
  requires: RequirementKey;
  /** The owner for a read (404 when absent or closed to the caller). */
  find(ctx: Ctx): Promise<{ uuid: string }>;
  /** The owner, locked in the transaction, for a change (409 when it takes none now). */
  lockForChange(ctx: Ctx, m: EntityManager): Promise<{ uuid: string }>;
  /** How the owner's variables and secret files reach its apps, for the set summaries. */
  applies: { variables: string; files: string };
}

/**
 * The eight routes of an owner's variables and secret files (list, set many, delete):
 * one shape for apps and projects. Each change records one audit entry on the owner,
 * with keys and file digests only, never a value or a content.
 */
export function variableRoutes(o: VariableOwnerRoutes): RouteDef[] {
  const TAG = 'variables';
  const whose = o.kind === 'app' ? "an app's" : "a project's";
  const owner = (uuid: string): VariableOwner => ({ kind: o.kind, uuid });
  const change = async (
    ctx: Ctx,
    write: (m: EntityManager, who: VariableOwner) => Promise<VariablesChange | null>,
    missing?: string,
  ) =>
    auditedWrite(ctx, async (tx) => {
      const found = await o.lockForChange(ctx, tx.m);
      const done = await write(tx.m, owner(found.uuid));
      if (!done) throw notFound(missing ?? 'variable');
      // one route table for apps and projects: the action is the generated route's
      await tx.audit({ action: ctx.route.audit as string, resourceUuid: found.uuid, ...done });
      return found;
    });
  return [
    route<{ uuid: string }>({
      method: 'get',
      path: `${o.base}/variables`,
      requires: o.requires,
      tag: TAG,
      response: yup.array(variableSchema),
      summary: `List ${whose} environment variables (sealed at rest): key, secret flag, size and SHA-256 digest of each; the value only when not secret (null when secret)`,
      async handler(ctx) {
        return listVariables(ctx.deps.dataSource, ctx.deps.secretBox, owner((await o.find(ctx)).uuid));
      },
    }),
    route<{ uuid: string }, {}, yup.InferType<typeof setVariablesBody>>({
      method: 'put',
      path: `${o.base}/variables`,
      requires: o.requires,
      tag: TAG,
      audit: `${o.kind}.variables_set`,
      summary: `Set many environment variables at once (others keep their value); one marked secret: true is never returned again and stays secret when set later without the flag; ${o.applies.variables}`,
      body: setVariablesBody,
      response: yup.array(variableSchema),
      async handler(ctx) {
        const found = await change(ctx, (m, who) => setVariables(m, ctx.deps.secretBox, who, ctx.body.variables));
        return listVariables(ctx.deps.dataSource, ctx.deps.secretBox, owner(found.uuid));
      },
    }),
    route<{ uuid: string; key: string }>({
      method: 'delete',
      path: `${o.base}/variables/{key}`,
      requires: o.requires,
      tag: TAG,
      status: 204,
      audit: `${o.kind}.variable_delete`,
      params: yup.object({ uuid: uuid().required(), key: str().max(255).required() }),
      summary: 'Remove an environment variable',
      async handler(ctx) {
        await change(ctx, (m, who) => deleteVariable(m, who, ctx.params.key));
        return undefined;
      },
    }),
    route<{ uuid: string }>({
      method: 'get',
      path: `${o.base}/secret_files`,
      requires: o.requires,
      tag: TAG,
      response: yup.array(secretFileSchema),
      summary: `List ${whose} secret files: names, sizes and SHA-256 digests, never the content`,
      async handler(ctx) {
        return listSecretFiles(ctx.deps.dataSource, owner((await o.find(ctx)).uuid));
      },
    }),
    route<{ uuid: string }, {}, yup.InferType<typeof setSecretFilesBody>>({
      method: 'put',
      path: `${o.base}/secret_files`,
      requires: o.requires,
      tag: TAG,
      audit: `${o.kind}.secret_files_set`,
      summary: `Set many secret files at once (${o.applies.files}); the content is sealed and never returned`,
      body: setSecretFilesBody,
      response: yup.array(secretFileSchema),
      async handler(ctx) {
        const found = await change(ctx, (m, who) => setSecretFiles(m, ctx.deps.secretBox, who, ctx.body.files));
        return listSecretFiles(ctx.deps.dataSource, owner(found.uuid));
      },
    }),
    route<{ uuid: string; file_uuid: string }>({
      method: 'delete',
      path: `${o.base}/secret_files/{file_uuid}`,
      requires: o.requires,
      tag: TAG,
      status: 204,
      audit: `${o.kind}.secret_file_delete`,
      summary: 'Remove a secret file',
      async handler(ctx) {
        await change(ctx, (m, who) => deleteSecretFile(m, who, ctx.params.file_uuid), 'secret file');
        return undefined;
      },
    }),
  ];
}
