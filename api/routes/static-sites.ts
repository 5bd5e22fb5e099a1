import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
import { BRANCH } from '../../domain/git-urls';
import { publishDirectoryProblem, SITE_NAME } from '../../domain/static-sites';
import { StaticSite, StaticSiteDeployment } from '../../entities/static-site';
import { assertProjectVisible } from '../access';
import { write } from '../commands/audited-write';
import { createStaticSite, deleteStaticSite, deployStaticSite, updateStaticSite } from '../commands/static-sites';
import { pageOf, type Page } from '../pagination';
import { notFound } from '../problem';
import { route, type AnyRouteContext } from '../route';
import { obj, str, uuid } from '../schemas/common';
import { siteDeploymentSchema, siteDeploymentView, siteListSchema, siteSchema, siteViews } from '../views/static-sites';
import { newestVisible } from '../visible-projects';

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

/** The site of the caller's workspace, in a project open to the caller, else 404. */
async function findSite(ctx: Ctx, uuid: string): Promise<StaticSite> {
  const site = await ctx.deps.dataSource.manager.findOneBy(StaticSite, {
    uuid,
    workspace_uuid: ctx.caller.workspaceUuid,
  });
  if (!site) throw notFound('static site');
  await assertProjectVisible(ctx, site.project_uuid, 'static site');
  return site;
}

async function view(ctx: Ctx, m: EntityManager, site: StaticSite) {
  return (await siteViews(m, [site], ctx.deps.config))[0]!;
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
      const list = await pageOf(ctx, await newestVisible(ctx, StaticSite, 'project_uuid'));
      return siteViews(ctx.deps.dataSource.manager, list, ctx.deps.config);
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
      const site = await write(ctx, async (tx) => view(ctx, tx.m, await createStaticSite(tx, ctx.caller, ctx.body)));
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
      return view(ctx, ctx.deps.dataSource.manager, await findSite(ctx, ctx.params.uuid));
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
    handler: (ctx) =>
      write(ctx, async (tx) =>
        view(ctx, tx.m, await updateStaticSite(tx, ctx.caller, { ...ctx.body, uuid: ctx.params.uuid })),
      ),
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
    handler: (ctx) =>
      write(ctx, async (tx) =>
        view(ctx, tx.m, await deployStaticSite(tx, ctx.caller, { ...ctx.body, uuid: ctx.params.uuid })),
      ),
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
      await write(ctx, (tx) => deleteStaticSite(tx, ctx.caller, { uuid: ctx.params.uuid }));
      return undefined;
    },
  }),
];
