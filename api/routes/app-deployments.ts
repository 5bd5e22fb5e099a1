import { readFile } from 'node:fs/promises';
import * as yup from 'yup';
import { PERIOD_DAYS } from '../../domain/apps';
import { one } from '../../entities/sql';
import { parseBuildLog, type BuildLogEntry } from '../../platform/build-log';
import { cancelDeployment, createDeployment } from '../commands/app-deployments';
import { write } from '../commands/audited-write';
import { selectPage, type Page } from '../pagination';
import { notFound } from '../problem';
import { route } from '../route';
import { deployBody, listDeploymentsQuery } from '../schemas/apps';
import {
  buildLogEntrySchema,
  DEPLOYMENT_COLUMNS,
  deploymentSchema,
  deploymentView,
  type DeploymentRow,
} from '../views/apps';
import { findApp } from './app-support';

const TAG = 'deployments';

/** POST /apps/{uuid}/deployments (its declaration also names the audit action of a git push's deployment). */
export const DEPLOY_ROUTE = route<{ uuid: string }, {}, yup.InferType<typeof deployBody>>({
  method: 'post',
  path: '/apps/{uuid}/deployments',
  requires: 'apps.deploy_commit',
  tag: TAG,
  status: 202,
  audit: 'deployment.create',
  summary:
    'Deploy: for git methods the branch head (resolved with git ls-remote) or the commit_sha given; otherwise the configured source',
  body: deployBody,
  response: deploymentSchema,
  async handler(ctx) {
    const deployment = await write(ctx, (tx) =>
      createDeployment(tx, ctx.caller, { ...ctx.body, appUuid: ctx.params.uuid }),
    );
    ctx.koa.set('Location', `/api/v1/apps/${ctx.params.uuid}/deployments/${deployment.uuid}`);
    return deploymentView(deployment);
  },
});

export const appDeploymentRoutes = [
  route<{ uuid: string }, Page & yup.InferType<typeof listDeploymentsQuery>, unknown>({
    method: 'get',
    path: '/apps/{uuid}/deployments',
    requires: 'apps.read',
    tag: TAG,
    paginated: true,
    query: listDeploymentsQuery,
    summary: "List an app's deployments, newest first; filter by status and period (7days, 30days, 90days, all)",
    response: yup.array(deploymentSchema),
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      const days = ctx.query.period ? PERIOD_DAYS[ctx.query.period] : null;
      const where = `app_uuid = $1 AND ($2::text IS NULL OR state = $2) AND ($3::int IS NULL OR created_at >= now() - make_interval(days => $3::int))`;
      const params = [app.uuid, ctx.query.status ?? null, days];
      const found = await selectPage<DeploymentRow>(ctx, {
        from: 'app_deployments',
        select: `SELECT ${DEPLOYMENT_COLUMNS} FROM app_deployments`,
        where,
        params,
        order: 'created_at DESC, uuid DESC',
      });
      return found.map(deploymentView);
    },
  }),
  DEPLOY_ROUTE,
  route<{ uuid: string; deployment_uuid: string }>({
    method: 'get',
    path: '/apps/{uuid}/deployments/{deployment_uuid}',
    requires: 'apps.read',
    tag: TAG,
    summary: 'Show a deployment',
    response: deploymentSchema,
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      const d = await one<DeploymentRow>(
        ctx.deps.dataSource,
        `SELECT ${DEPLOYMENT_COLUMNS} FROM app_deployments WHERE uuid = $1 AND app_uuid = $2`,
        [ctx.params.deployment_uuid, app.uuid],
      );
      if (!d) throw notFound('deployment');
      return deploymentView(d);
    },
  }),
  route<{ uuid: string; deployment_uuid: string }>({
    method: 'get',
    path: '/apps/{uuid}/deployments/{deployment_uuid}/logs',
    requires: 'apps.read',
    tag: TAG,
    summary:
      "A deployment's build output, oldest line first (empty while nothing was written, and with a data plane that keeps no build logs)",
    response: yup.array(buildLogEntrySchema),
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      const d = await one<{ uuid: string }>(
        ctx.deps.dataSource,
        `SELECT uuid FROM app_deployments WHERE uuid = $1 AND app_uuid = $2`,
        [ctx.params.deployment_uuid, app.uuid],
      );
      if (!d) throw notFound('deployment');
      return readBuildLog(ctx.deps.localLayout?.buildLogFile(d.uuid) ?? null);
    },
  }),
  route<{ uuid: string; deployment_uuid: string }>({
    method: 'post',
    path: '/apps/{uuid}/deployments/{deployment_uuid}/cancel',
    requires: 'apps.deploy_commit',
    tag: TAG,
    status: 202,
    audit: 'deployment.cancel',
    summary:
      'Cancel a pending or running deployment: it reads cancelling, then cancelled (a rollout already under way completes)',
    response: deploymentSchema,
    async handler(ctx) {
      const d = await write(ctx, (tx) =>
        cancelDeployment(tx, ctx.caller, { appUuid: ctx.params.uuid, deploymentUuid: ctx.params.deployment_uuid }),
      );
      // The database's `cancelling` is the durable request (the workflow reads it at every poll); the signal only makes it prompt.
      await ctx.deps.temporal.workflow
        .getHandle(`app-deploy/${d.app_uuid}/${d.uuid}`)
        .signal('cancelDeployment')
        .catch((err: Error) =>
          ctx.deps.logger.warn(
            { err: err.message, deployment: d.uuid },
            'cancel signal not delivered; the workflow reads the state',
          ),
        );
      return deploymentView(d);
    },
  }),
];

async function readBuildLog(file: string | null): Promise<BuildLogEntry[]> {
  if (!file) return [];
  try {
    return parseBuildLog(await readFile(file, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
