import * as yup from 'yup';
import { REGISTRY_HOSTNAME, REGISTRY_PROVIDERS } from '../../domain/registries';
import type { EntityManager } from 'typeorm';
import { RegistryCredential } from '../../entities/registry-credential';
import { deleteOfWorkspace, write } from '../commands/audited-write';
import { createRegistryCredential, updateRegistryCredential } from '../commands/registry-credentials';
import { pageOf, type Page } from '../pagination';
import { notFound, unprocessable } from '../problem';
import { route, type AnyRouteContext } from '../route';
import { obj, oneOf, str } from '../schemas/common';
import { registryCredentialSchema, registryCredentialView } from '../views/registry-credentials';

const TAG = 'container_registry_credentials';
const BASE = '/container_registry_credentials';

const fields = {
  name: str().trim().min(1).max(100),
  registry: oneOf(REGISTRY_PROVIDERS),
  username: str().max(255),
  token: str().min(1).max(8192),
  registry_hostname: str()
    .trim()
    .max(253)
    .matches(REGISTRY_HOSTNAME, '${path} must be a host name (optionally with :port), without scheme or path')
    .nullable(),
};
const createBody = obj({
  ...fields,
  name: fields.name.required(),
  registry: fields.registry.required(),
  username: fields.username.required(),
  token: fields.token.required(),
});
const updateBody = obj(fields);

type Ctx = AnyRouteContext;

/**
 * For routes that take `deployment_config.credential_id` (apps with container_registry):
 * 422 unless it names a credential of the caller's workspace.
 */
export async function checkRegistryCredential(
  ctx: Ctx,
  credentialId: string,
  path = 'body.deployment_config.credential_id',
): Promise<RegistryCredential> {
  const row = await ctx.deps.dataSource.manager.findOneBy(RegistryCredential, {
    uuid: credentialId,
    workspace_uuid: ctx.caller.workspaceUuid,
  });
  if (!row)
    throw unprocessable('credential_id is not a container registry credential of this workspace', [
      { path, message: 'no such credential' },
    ]);
  return row;
}

async function find(
  ctx: Ctx,
  uuid: string,
  db: EntityManager = ctx.deps.dataSource.manager,
): Promise<RegistryCredential> {
  const row = await db.findOneBy(RegistryCredential, { uuid, workspace_uuid: ctx.caller.workspaceUuid });
  if (!row) throw notFound('container registry credential');
  return row;
}

export const registryCredentialRoutes = [
  route<{}, Page, unknown>({
    method: 'get',
    path: BASE,
    requires: 'registry_credentials.read',
    tag: TAG,
    paginated: true,
    summary: 'List the container registry credentials of the workspace, newest first (tokens are never returned)',
    response: yup.array(registryCredentialSchema),
    async handler(ctx) {
      const list = await pageOf(
        ctx,
        ctx.deps.dataSource.manager
          .createQueryBuilder(RegistryCredential, 'c')
          .where('c.workspace_uuid = :workspace', { workspace: ctx.caller.workspaceUuid })
          .orderBy('c.created_at', 'DESC')
          .addOrderBy('c.uuid', 'DESC'),
      );
      return list.map(registryCredentialView);
    },
  }),
  route<{}, {}, yup.InferType<typeof createBody>>({
    method: 'post',
    path: BASE,
    requires: 'registry_credentials.write',
    tag: TAG,
    status: 201,
    audit: 'registry_credential.create',
    summary: 'Store a container registry credential; the token is encrypted at rest and never returned',
    body: createBody,
    response: registryCredentialSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const row = await createRegistryCredential(tx, ctx.caller, ctx.body);
        ctx.koa.set('Location', `/api/v1${BASE}/${row.uuid}`);
        return registryCredentialView(row);
      }),
  }),
  route<{ uuid: string }>({
    method: 'get',
    path: `${BASE}/{uuid}`,
    requires: 'registry_credentials.read',
    tag: TAG,
    summary: 'Show one container registry credential (without its token)',
    response: registryCredentialSchema,
    async handler(ctx) {
      return registryCredentialView(await find(ctx, ctx.params.uuid));
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof updateBody>>({
    method: 'put',
    path: `${BASE}/{uuid}`,
    requires: 'registry_credentials.write',
    tag: TAG,
    audit: 'registry_credential.update',
    summary: 'Update a container registry credential; send token to replace it',
    body: updateBody,
    response: registryCredentialSchema,
    handler: (ctx) =>
      write(ctx, async (tx) =>
        registryCredentialView(await updateRegistryCredential(tx, ctx.caller, { ...ctx.body, uuid: ctx.params.uuid })),
      ),
  }),
  route<{ uuid: string }>({
    method: 'delete',
    path: `${BASE}/{uuid}`,
    requires: 'registry_credentials.write',
    tag: TAG,
    status: 204,
    audit: 'registry_credential.delete',
    summary: 'Delete a container registry credential',
    handler: (ctx) =>
      write(ctx, async (tx) => {
        await deleteOfWorkspace(tx, ctx.caller, RegistryCredential, {
          uuid: ctx.params.uuid,
          action: 'registry_credential.delete',
          what: 'container registry credential',
        });
      }),
  }),
];
