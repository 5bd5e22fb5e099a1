import { randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
import { BRANCH, normalizeRepositoryUrl } from '../../domain/git-urls';
import { publishDirectoryProblem, SITE_NAME, siteHost } from '../../domain/static-sites';
import { StaticSiteDeployment } from '../../entities/static-site';
import { one } from '../../entities/sql';
import { assertProjectVisible, visibleProjectsClause } from '../access';
import { recordAudit, snapshot } from '../audit';
import { pageOf, selectPage, type Page } from '../pagination';
import { checkProject } from '../placement';
import { conflict, notFound, Problem, unprocessable } from '../problem';
import { route, type AnyRouteContext } from '../route';
import { obj, str, uuid } from '../schemas/common';
import {
  SITE_SELECT,
  siteDeploymentSchema,
  siteDeploymentView,
  siteListSchema,
  siteSchema,
  siteView,
  type SiteRow,
} from '../views/static-sites';

const TAG = 'static_sites';

const sourceFields = {
  repository: str().trim().min(1).max(2048),
  branch: str().max(200).matches(BRANCH, '${path} must be a valid branch name'),
  build_command: str().max(1000).nullable(),
  publish_directory: str()
    .max(1024)
    .test('publish-directory', function check(v) {
      if (v === undefined) return true;
      const problem = publishDirectoryProblem(v);
      return problem ? this.createError({ message: `\${path} ${problem}` }) : true;
    }),
  credential_id: uuid().nullable(),
};
const deploymentConfig = obj(sourceFields);
const createBody = obj({
  name: str().matches(SITE_NAME, '${path} must be a DNS label: 3-63 lowercase letters, digits or hyphens').required(),
  label: str().trim().min(1).max(100),
  project_id: uuid(),
  region: str().max(50),
  deployment_config: deploymentConfig.default(undefined),
});
const updateBody = obj({ label: str().trim().min(1).max(100), project_id: uuid().nullable() });

type Ctx = AnyRouteContext;
type Source = yup.InferType<typeof deploymentConfig>;

async function findSite(
  ctx: Ctx,
  uuid: string,
  db: EntityManager = ctx.deps.dataSource.manager,
  lock = false,
): Promise<SiteRow> {
  const row = await one<SiteRow>(
    db,
    `${SITE_SELECT} WHERE s.uuid = $1 AND s.workspace_uuid = $2${lock ? ' FOR UPDATE OF s' : ''}`,
    [uuid, ctx.caller.workspaceUuid],
  );
  if (!row) throw notFound('static site');
  await assertProjectVisible(ctx, row.project_id, 'static site');
  return row;
}

/** Merges a content-source change into the stored one; the repository is checked like stacks'. */
async function mergeSource(
  ctx: Ctx,
  current: SiteRow['deployment_config'],
  currentCredential: string | null,
  b: Source,
) {
  let repository = current.repository;
  if (b.repository !== undefined) {
    const r = normalizeRepositoryUrl(b.repository, ctx.deps.config.gitAllowFileUrls);
    if ('problem' in r)
      throw unprocessable(`repository ${r.problem}`, [{ path: 'body.repository', message: r.problem }]);
    repository = r.url;
  }
  const credentialId = b.credential_id === undefined ? currentCredential : b.credential_id;
  if (credentialId && b.credential_id !== undefined) {
    const found = await one(
      ctx.deps.dataSource,
      `SELECT 1 FROM container_registry_credentials WHERE uuid = $1 AND workspace_uuid = $2`,
      [credentialId, ctx.caller.workspaceUuid],
    );
    if (!found)
      throw unprocessable('credential_id is not a stored credential of this workspace', [
        { path: 'body.credential_id', message: 'no such credential' },
      ]);
  }
  return {
    config: {
      repository,
      branch: b.branch ?? current.branch ?? 'main',
      build_command: b.build_command === undefined ? (current.build_command ?? null) : b.build_command,
      publish_directory: b.publish_directory ?? current.publish_directory ?? '.',
    },
    credentialId,
  };
}

export const staticSiteRoutes = [
  route<{}, Page, unknown>({
    method: 'get',
    path: '/static_sites',
    requires: 'static_sites.read',
    tag: TAG,
    paginated: true,
    summary: 'List the static sites of the workspace, newest first',
    response: siteListSchema,
    async handler(ctx) {
      const visible = await visibleProjectsClause(ctx, 's.project_id', 2);
      const where = `s.workspace_uuid = $1 AND ${visible.sql}`;
      const list = await selectPage<SiteRow>(ctx, {
        from: 'static_sites s',
        select: SITE_SELECT,
        where,
        params: [ctx.caller.workspaceUuid, visible.param],
        order: 's.created_at DESC, s.uuid DESC',
      });
      return list.map((s) => siteView(s, ctx.deps.config.sitesDomain));
    },
  }),
  route<{}, {}, yup.InferType<typeof createBody>>({
    method: 'post',
    path: '/static_sites',
    requires: 'static_sites.create',
    tag: TAG,
    status: 201,
    audit: 'static_site.create',
    summary:
      'Create a static site served under its name (no suffix); with a deployment_config its first deployment follows provisioning',
    body: createBody,
    response: siteSchema,
    async handler(ctx) {
      const b = ctx.body;
      if (!ctx.deps.storage?.endpoint)
        throw new Problem(503, 'object storage is not configured on this installation (BERTH_S3_ENDPOINT)');
      const source = b.deployment_config ? await mergeSource(ctx, {}, null, b.deployment_config) : null;
      const { site, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        if (b.project_id) await checkProject(ctx, m, b.project_id);
        const [region] = b.region
          ? await m.query(`SELECT id FROM regions WHERE code = $1`, [b.region])
          : await m.query(
              `SELECT g.id FROM regions g JOIN compute_resources c ON c.region_id = g.id WHERE c.workspace_uuid = $1 ORDER BY c.created_at LIMIT 1`,
              [ctx.caller.workspaceUuid],
            );
        if (!region)
          throw unprocessable(
            b.region ? `region ${b.region} does not exist` : 'the workspace has no region yet; send region',
            [{ path: 'body.region', message: 'unknown region' }],
          );
        const uuid = randomUUID();
        const [row] = await m.query(
          `INSERT INTO static_sites (uuid, workspace_uuid, project_id, region_id, name, label, content_bucket, deployment_config, credential_id)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (name) DO NOTHING RETURNING uuid`,
          [
            uuid,
            ctx.caller.workspaceUuid,
            b.project_id ?? null,
            region.id,
            b.name,
            b.label ?? b.name,
            `site-${randomBytes(8).toString('hex')}`,
            JSON.stringify(source?.config ?? {}),
            source?.credentialId ?? null,
          ],
        );
        if (!row)
          throw conflict(`the name "${b.name}" is taken: a static site is served under its name, so names are unique`);
        let deploymentUuid: string | null = null;
        if (source?.config.repository) {
          deploymentUuid = randomUUID();
          await m.query(`INSERT INTO static_site_deployments (uuid, site_uuid) VALUES ($1, $2)`, [
            deploymentUuid,
            uuid,
          ]);
        }
        const op = await ctx.deps.outbox.enqueue(m, {
          operation: 'static-site-provision',
          workflow: 'staticSiteProvision',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: uuid,
          args: [{ workspaceUuid: ctx.caller.workspaceUuid, siteUuid: uuid, deploymentUuid }],
        });
        await recordAudit(m, ctx, { resourceUuid: uuid, before: null, after: await snapshot(m, 'static_sites', uuid) });
        return { site: siteView(await findSite(ctx, uuid, m), ctx.deps.config.sitesDomain), operation: op };
      });
      await ctx.deps.outbox.dispatch(operation);
      ctx.koa.set('Location', `/api/v1/static_sites/${site.uuid}`);
      return site;
    },
  }),
  route<{ uuid: string }>({
    method: 'get',
    path: '/static_sites/{uuid}',
    requires: 'static_sites.read',
    tag: TAG,
    summary: 'Show a static site',
    response: siteSchema,
    async handler(ctx) {
      return siteView(await findSite(ctx, ctx.params.uuid), ctx.deps.config.sitesDomain);
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof updateBody>>({
    method: 'put',
    path: '/static/{uuid}',
    requires: 'static_sites.update',
    tag: TAG,
    audit: 'static_site.update',
    summary: "Update a static site's label or move it to another project; the served name is fixed",
    body: updateBody,
    response: siteSchema,
    async handler(ctx) {
      return ctx.deps.dataSource.transaction(async (m) => {
        const s = await findSite(ctx, ctx.params.uuid, m, true);
        if (ctx.body.project_id) await checkProject(ctx, m, ctx.body.project_id);
        const before = await snapshot(m, 'static_sites', s.uuid);
        await m.query(`UPDATE static_sites SET label = $2, project_id = $3, updated_at = now() WHERE uuid = $1`, [
          s.uuid,
          ctx.body.label ?? s.label,
          ctx.body.project_id === undefined ? s.project_id : ctx.body.project_id,
        ]);
        await recordAudit(m, ctx, { resourceUuid: s.uuid, before, after: await snapshot(m, 'static_sites', s.uuid) });
        return siteView(await findSite(ctx, s.uuid, m), ctx.deps.config.sitesDomain);
      });
    },
  }),
  route<{ uuid: string }, {}, Source>({
    method: 'put',
    path: '/static_sites/{uuid}/deployment',
    requires: 'static_sites.update',
    tag: TAG,
    status: 202,
    audit: 'static_site.deploy',
    summary:
      'Change the content source and build settings (repository, branch, build_command, publish_directory, credential_id) and deploy',
    body: deploymentConfig,
    response: siteSchema,
    async handler(ctx) {
      const current = await findSite(ctx, ctx.params.uuid);
      const source = await mergeSource(ctx, current.deployment_config, current.credential_id, ctx.body);
      if (!source.config.repository)
        throw unprocessable('a content source is needed: send repository', [
          { path: 'body.repository', message: 'required' },
        ]);
      const { site, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        const s = await findSite(ctx, ctx.params.uuid, m, true);
        if (s.state === 'pending') throw conflict('the site is still being provisioned; try again when it is assigned');
        const busy = await one(
          m,
          `SELECT 1 FROM static_site_deployments WHERE site_uuid = $1 AND state IN ('pending', 'running')`,
          [s.uuid],
        );
        if (busy) throw conflict('a deployment of this site is in progress');
        const before = await snapshot(m, 'static_sites', s.uuid);
        await m.query(
          `UPDATE static_sites SET deployment_config = $2, credential_id = $3, updated_at = now() WHERE uuid = $1`,
          [s.uuid, JSON.stringify(source.config), source.credentialId],
        );
        const deploymentUuid = randomUUID();
        await m.query(`INSERT INTO static_site_deployments (uuid, site_uuid) VALUES ($1, $2)`, [
          deploymentUuid,
          s.uuid,
        ]);
        const op = await ctx.deps.outbox.enqueue(m, {
          operation: 'static-site-deploy',
          workflow: 'staticSiteDeploy',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: s.uuid,
          subId: deploymentUuid,
          args: [{ workspaceUuid: ctx.caller.workspaceUuid, siteUuid: s.uuid, deploymentUuid }],
        });
        await recordAudit(m, ctx, { resourceUuid: s.uuid, before, after: await snapshot(m, 'static_sites', s.uuid) });
        return { site: siteView(await findSite(ctx, s.uuid, m), ctx.deps.config.sitesDomain), operation: op };
      });
      await ctx.deps.outbox.dispatch(operation);
      return site;
    },
  }),
  route<{ uuid: string }, Page, unknown>({
    method: 'get',
    path: '/static_sites/{uuid}/deployments',
    requires: 'static_sites.read',
    tag: TAG,
    paginated: true,
    summary: "A static site's deployments, newest first",
    response: yup.array(siteDeploymentSchema),
    async handler(ctx) {
      const s = await findSite(ctx, ctx.params.uuid);
      const list = await pageOf(
        ctx,
        ctx.deps.dataSource.manager
          .createQueryBuilder(StaticSiteDeployment, 'd')
          .where('d.site_uuid = :site', { site: s.uuid })
          .orderBy('d.created_at', 'DESC')
          .addOrderBy('d.uuid', 'DESC'),
      );
      return list.map(siteDeploymentView);
    },
  }),
  route<{ uuid: string }>({
    method: 'delete',
    path: '/static_sites/{uuid}',
    requires: 'static_sites.delete',
    tag: TAG,
    status: 204,
    audit: 'static_site.delete',
    summary: 'Delete a static site: its route is removed and its content deleted',
    async handler(ctx) {
      const operation = await ctx.deps.dataSource.transaction(async (m) => {
        const s = await findSite(ctx, ctx.params.uuid, m, true);
        const before = await snapshot(m, 'static_sites', s.uuid);
        const bucket = before!.content_bucket as string;
        await m.query(`DELETE FROM static_sites WHERE uuid = $1`, [s.uuid]);
        await recordAudit(m, ctx, { resourceUuid: s.uuid, before, after: null });
        return ctx.deps.outbox.enqueue(m, {
          operation: 'static-site-delete',
          workflow: 'storageCleanup',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: s.uuid,
          args: [{ bucketName: bucket, accessKey: null, siteHost: siteHost(s.name, ctx.deps.config.sitesDomain) }],
        });
      });
      await ctx.deps.outbox.dispatch(operation);
      return undefined;
    },
  }),
];
