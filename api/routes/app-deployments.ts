import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import * as yup from 'yup';
import { DEPLOYABLE_STATES, isGitMethod, PERIOD_DAYS } from '../../domain/apps';
import { one, rows } from '../../entities/sql';
import { parseBuildLog, type BuildLogEntry } from '../../platform/build-log';
import { recordAudit, snapshot } from '../audit';
import { write } from '../commands/audited-write';
import { selectPage, type Page } from '../pagination';
import { conflict, notFound, unprocessable } from '../problem';
import { route } from '../route';
import { deployBody, listDeploymentsQuery } from '../schemas/apps';
import {
  buildLogEntrySchema,
  DEPLOYMENT_COLUMNS,
  deploymentSchema,
  deploymentView,
  type DeploymentRow,
  type DeploymentView,
} from '../views/apps';
import { findApp, type Ctx } from './app-support';

const TAG = 'deployments';

/**
 * Deploys an app, as POST /apps/{uuid}/deployments: the app (visible to the caller, in a
 * deployable state, no deployment in progress) gets a pending deployment of the commit
 * given (git methods; else the branch head, resolved by the workflow), its audit entry
 * (`deployment.create`, the caller as actor) and its `app-deploy` workflow via the outbox.
 * Also the git endpoint's post-receive callback (api/git-push-hook.ts), with the pushed commit.
 */
export function createDeployment(
  ctx: Ctx,
  appUuid: string,
  body: { commit_sha?: string; branch?: string },
): Promise<DeploymentView> {
  return write(ctx, async ({ m, enqueue }) => {
    const app = await findApp(ctx, appUuid, m, true);
    if (app.state === 'deploying') throw conflict('a deployment of this app is in progress');
    if (!(DEPLOYABLE_STATES as readonly string[]).includes(app.state)) {
      throw unprocessable(`an app in state ${app.state} cannot be deployed`, [
        { path: 'path.uuid', message: `app is ${app.state}` },
      ]);
    }
    const git = isGitMethod(app.deployment_method);
    if (!git && (body.commit_sha || body.branch)) {
      throw unprocessable(
        `a ${app.deployment_method} app has no commits: commit_sha and branch are for git deployment methods`,
        [{ path: body.commit_sha ? 'body.commit_sha' : 'body.branch', message: 'only for git deployment methods' }],
      );
    }
    const uuid = randomUUID();
    const branch = git ? (body.branch ?? (app.deployment_config.branch as string | undefined) ?? 'main') : null;
    const inserted = await rows<DeploymentRow>(
      m,
      `INSERT INTO app_deployments (uuid, app_uuid, workspace_uuid, deployment_method, commit_sha, branch)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING ${DEPLOYMENT_COLUMNS}`,
      [uuid, app.uuid, ctx.caller.workspaceUuid, app.deployment_method, git ? (body.commit_sha ?? null) : null, branch],
    );
    if (inserted.length === 0) throw conflict('a deployment of this app is in progress');
    await recordAudit(m, ctx, { resourceUuid: uuid, after: await snapshot(m, 'app_deployments', uuid) });
    await enqueue({
      operation: 'app-deploy',
      workflow: 'appDeploy',
      workspaceUuid: ctx.caller.workspaceUuid,
      resourceUuid: app.uuid,
      subId: uuid,
      args: [{ deploymentUuid: uuid }],
    });
    return deploymentView(inserted[0]!);
  });
}

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
    const view = await createDeployment(ctx, ctx.params.uuid, ctx.body);
    ctx.koa.set('Location', `/api/v1/apps/${ctx.params.uuid}/deployments/${view.uuid}`);
    return view;
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
      const { app, d } = await ctx.deps.dataSource.transaction(async (m) => {
        const app = await findApp(ctx, ctx.params.uuid, m);
        const exists = await one<{ state: string }>(
          m,
          `SELECT state FROM app_deployments WHERE uuid = $1 AND app_uuid = $2 FOR UPDATE`,
          [ctx.params.deployment_uuid, app.uuid],
        );
        if (!exists) throw notFound('deployment');
        if (!['pending', 'running', 'cancelling'].includes(exists.state)) {
          throw unprocessable(`a ${exists.state} deployment cannot be cancelled`, [
            { path: 'path.deployment_uuid', message: `deployment is ${exists.state}` },
          ]);
        }
        const before = await snapshot(m, 'app_deployments', ctx.params.deployment_uuid);
        const d = (await one<DeploymentRow>(
          m,
          `UPDATE app_deployments SET state = 'cancelling', updated_at = now() WHERE uuid = $1 RETURNING ${DEPLOYMENT_COLUMNS}`,
          [ctx.params.deployment_uuid],
        ))!;
        await recordAudit(m, ctx, {
          resourceUuid: d.uuid,
          before,
          after: await snapshot(m, 'app_deployments', d.uuid),
        });
        return { app, d };
      });
      // The database's `cancelling` is the durable request (the workflow reads it at every poll); the signal only makes it prompt.
      await ctx.deps.temporal.workflow
        .getHandle(`app-deploy/${app.uuid}/${d.uuid}`)
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
