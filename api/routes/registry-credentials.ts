import { randomUUID } from 'node:crypto';
import * as yup from 'yup';
import { needsHostname, REGISTRY_HOSTNAME, REGISTRY_PROVIDERS, type RegistryProvider } from '../../domain/registries';
import type { EntityManager } from 'typeorm';
import { columnsOf } from '../../entities/columns';
import { RegistryCredential } from '../../entities/registry-credential';
import { one, rows } from '../../entities/sql';
import { recordAudit, snapshot } from '../audit';
import { pageOf, type Page } from '../pagination';
import { conflict, notFound, unprocessable } from '../problem';
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

function assertHostname(registry: RegistryProvider, hostname: string | null | undefined): void {
  if (needsHostname(registry) && !hostname) {
    throw unprocessable(`registry_hostname is required for registry ${registry}`, [
      { path: 'body.registry_hostname', message: `required for ${registry}` },
    ]);
  }
}

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

const duplicate = (name: string) =>
  conflict(`a container registry credential named "${name}" already exists in this workspace`);

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
    async handler(ctx) {
      const b = ctx.body;
      assertHostname(b.registry, b.registry_hostname);
      const row = await ctx.deps.dataSource.transaction(async (m) => {
        const inserted = await one<RegistryCredential>(
          m,
          `INSERT INTO container_registry_credentials (uuid, workspace_uuid, name, registry, username, registry_hostname, token_sealed)
           VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (workspace_uuid, name) DO NOTHING RETURNING ${columnsOf(RegistryCredential)}`,
          [
            randomUUID(),
            ctx.caller.workspaceUuid,
            b.name,
            b.registry,
            b.username,
            b.registry_hostname || null,
            ctx.deps.secretBox.seal(b.token),
          ],
        );
        if (!inserted) throw duplicate(b.name);
        await recordAudit(m, ctx, {
          resourceUuid: inserted.uuid,
          before: null,
          after: await snapshot(m, 'container_registry_credentials', inserted.uuid),
        });
        return inserted;
      });
      ctx.koa.set('Location', `/api/v1${BASE}/${row.uuid}`);
      return registryCredentialView(row);
    },
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
    async handler(ctx) {
      return ctx.deps.dataSource.transaction(async (m) => {
        const current = await find(ctx, ctx.params.uuid, m);
        const b = ctx.body;
        const registry = (b.registry ?? current.registry) as RegistryProvider;
        const hostname = b.registry_hostname === undefined ? current.registry_hostname : b.registry_hostname || null;
        assertHostname(registry, hostname);
        if (b.name !== undefined && b.name !== current.name) {
          const taken = await one(
            m,
            `SELECT 1 FROM container_registry_credentials WHERE workspace_uuid = $1 AND name = $2`,
            [ctx.caller.workspaceUuid, b.name],
          );
          if (taken) throw duplicate(b.name);
        }
        const before = await snapshot(m, 'container_registry_credentials', current.uuid);
        const row = await one<RegistryCredential>(
          m,
          `UPDATE container_registry_credentials SET name = COALESCE($2, name), registry = $3, username = COALESCE($4, username),
                  registry_hostname = $5, token_sealed = COALESCE($6, token_sealed), updated_at = now()
            WHERE uuid = $1 RETURNING ${columnsOf(RegistryCredential)}`,
          [
            current.uuid,
            b.name ?? null,
            registry,
            b.username ?? null,
            hostname,
            b.token === undefined ? null : ctx.deps.secretBox.seal(b.token),
          ],
        );
        await recordAudit(m, ctx, {
          resourceUuid: current.uuid,
          before,
          after: await snapshot(m, 'container_registry_credentials', current.uuid),
        });
        return registryCredentialView(row!);
      });
    },
  }),
  route<{ uuid: string }>({
    method: 'delete',
    path: `${BASE}/{uuid}`,
    requires: 'registry_credentials.write',
    tag: TAG,
    status: 204,
    audit: 'registry_credential.delete',
    summary: 'Delete a container registry credential',
    async handler(ctx) {
      await ctx.deps.dataSource.transaction(async (m) => {
        // The row as it was, from the delete itself: of two concurrent deletes, the second finds nothing (404).
        const [deleted] = await rows<{ s: Record<string, unknown> }>(
          m,
          `DELETE FROM container_registry_credentials t WHERE uuid = $1 AND workspace_uuid = $2 RETURNING to_jsonb(t) AS s`,
          [ctx.params.uuid, ctx.caller.workspaceUuid],
        );
        if (!deleted) throw notFound('container registry credential');
        await recordAudit(m, ctx, { resourceUuid: deleted.s.uuid as string, before: deleted.s, after: null });
      });
      return undefined;
    },
  }),
];
