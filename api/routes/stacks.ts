import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
import { composePathProblem, type Manifest } from '../../domain/compose';
import { BRANCH, normalizeRepositoryUrl } from '../../domain/git-urls';
import { typedStart, type Workflows } from '../../platform/workflow-starts';
import { STACK_NAME, VARIABLE_NAME, type AnalyzeInput, type AnalyzeResult } from '../../domain/stacks';
import { Stack } from '../../entities/stack';
import { one, rows } from '../../entities/sql';
import { assertProjectVisible } from '../access';
import { recordAudit, snapshot } from '../audit';
import { pageOf, type Page } from '../pagination';
import { checkPlacement, checkResource } from '../placement';
import { conflict, notFound, Problem, unprocessable } from '../problem';
import { route, type AnyRouteContext } from '../route';
import { bool, json, obj, str, uuid } from '../schemas/common';
import { analyzeSchema, stackListSchema, stackSchema, stackViews } from '../views/stacks';
import { whereVisible } from '../visible-projects';

const TAG = 'stacks';

const repositoryUrl = () => str().trim().min(1).max(2048);
const branch = () => str().max(200).matches(BRANCH, '${path} must be a valid branch name');
const composePath = () =>
  str()
    .max(1024)
    .test('compose-path', function check(v) {
      if (v === undefined) return true;
      const problem = composePathProblem(v);
      return problem ? this.createError({ message: `\${path} ${problem}` }) : true;
    });
const variables = () =>
  json().test('variables', function check(v) {
    if (v === undefined) return true;
    for (const [k, value] of Object.entries(v as Record<string, unknown>)) {
      if (!VARIABLE_NAME.test(k)) return this.createError({ message: `variables.${k} is not a valid variable name` });
      if (typeof value !== 'string' || value.length > 32_768)
        return this.createError({ message: `variables.${k} must be a string of at most 32768 characters` });
    }
    return Object.keys(v as object).length <= 200 || this.createError({ message: 'at most 200 variables' });
  });

const analyzeBody = obj({
  repository_url: repositoryUrl().required(),
  branch: branch().required(),
  compose_path: composePath(),
  resource_id: uuid(),
  credential_id: uuid(),
});
const createBody = obj({
  name: str().matches(STACK_NAME, '${path} must be 3-40 lowercase letters, digits or hyphens').required(),
  label: str().trim().min(1).max(100),
  project_id: uuid(),
  resource_id: uuid().required(),
  repository_url: repositoryUrl().required(),
  branch: branch().required(),
  compose_path: composePath(),
  credential_id: uuid(),
  auto_deploy_enabled: bool(),
  variables: variables(),
});
const deploymentBody = obj({
  branch: branch(),
  auto_deploy_enabled: bool(),
  repository: repositoryUrl(),
  credential_id: uuid().nullable(),
});
const redeployBody = obj({ variables: variables() });
const updateBody = obj({ label: str().trim().min(1).max(100), project_id: uuid().nullable() });

type Ctx = AnyRouteContext;

function repository(ctx: Ctx, value: string, field: string): string {
  const r = normalizeRepositoryUrl(value, ctx.deps.config.gitAllowFileUrls);
  if ('problem' in r) throw unprocessable(`${field} ${r.problem}`, [{ path: `body.${field}`, message: r.problem }]);
  return r.url;
}

async function checkCredential(ctx: Ctx, credentialId: string | null | undefined): Promise<void> {
  if (!credentialId) return;
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

/** Runs the analysis on a worker (it clones with git there) and waits for it. */
async function analyze(ctx: Ctx, input: AnalyzeInput): Promise<AnalyzeResult> {
  const id = randomUUID();
  try {
    const analysis = typedStart('stackAnalyze', [input], {
      operation: 'stack-analyze',
      workspaceUuid: ctx.caller.workspaceUuid,
      resourceUuid: id,
    });
    return await ctx.deps.temporal.workflow.execute<Workflows['stackAnalyze']>(analysis.workflowType, {
      ...analysis.options,
      taskQueue: ctx.deps.config.taskQueue,
      workflowExecutionTimeout: '4 minutes',
    });
  } catch (err) {
    if (err instanceof WorkflowFailedError) {
      let cause: unknown = err.cause;
      while (cause && !(cause instanceof ApplicationFailure)) cause = (cause as { cause?: unknown }).cause;
      if (cause instanceof ApplicationFailure && (cause.type === 'ComposeError' || cause.type === 'GitError')) {
        const path = cause.type === 'GitError' ? 'body.repository_url' : 'body.compose_path';
        throw unprocessable(cause.message, [{ path, message: cause.message }]);
      }
      throw new Problem(503, 'the analysis did not finish; try again shortly', { headers: { 'Retry-After': '10' } });
    }
    throw err;
  }
}

async function findStack(
  ctx: Ctx,
  uuid: string,
  db: EntityManager = ctx.deps.dataSource.manager,
  lock = false,
): Promise<Stack> {
  const row = await db.findOne(Stack, {
    where: { uuid, workspace_uuid: ctx.caller.workspaceUuid },
    ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}),
  });
  if (!row) throw notFound('stack');
  await assertProjectVisible(ctx, row.project_id, 'stack');
  return row;
}

async function view(ctx: Ctx, db: EntityManager, uuid: string) {
  return (await stackViews(db, ctx.caller.workspaceUuid, [await findStack(ctx, uuid, db)]))[0]!;
}

function checkVariables(manifest: Manifest, values: Record<string, string>): void {
  const missing = manifest.required_variables.filter((v) => values[v] === undefined);
  const known = new Set([...manifest.required_variables, ...manifest.optional_variables.map((v) => v.name)]);
  const unknown = Object.keys(values).filter((v) => !known.has(v));
  const errors = [
    ...missing.map((v) => ({ path: `body.variables.${v}`, message: 'required by the compose file' })),
    ...unknown.map((v) => ({ path: `body.variables.${v}`, message: 'not used by the compose file' })),
  ];
  if (errors.length > 0) {
    throw unprocessable(
      missing.length > 0
        ? `the compose file needs values for: ${missing.join(', ')}`
        : `variables not used by the compose file: ${unknown.join(', ')}`,
      errors,
    );
  }
}

async function startDeployment(ctx: Ctx, m: EntityManager, stackUuid: string) {
  const running = await one(
    m,
    `SELECT 1 FROM stack_deployments WHERE stack_uuid = $1 AND state NOT IN ('completed', 'failed')`,
    [stackUuid],
  );
  if (running) throw conflict('a deployment of this stack is in progress');
  const deploymentUuid = randomUUID();
  await m.query(`INSERT INTO stack_deployments (uuid, stack_uuid) VALUES ($1, $2)`, [deploymentUuid, stackUuid]);
  return ctx.deps.outbox.enqueue(m, {
    operation: 'stack-deploy',
    workflow: 'stackDeploy',
    workspaceUuid: ctx.caller.workspaceUuid,
    resourceUuid: stackUuid,
    subId: deploymentUuid,
    args: [{ stackUuid, deploymentUuid }],
  });
}

export const stackRoutes = [
  route<{}, {}, yup.InferType<typeof analyzeBody>>({
    method: 'post',
    path: '/stacks/analyze',
    requires: 'stacks.write',
    tag: TAG,
    audit: false,
    summary:
      'Clone a Git repository and analyze its compose file: services, managed add-ons, volumes, required variables and warnings. Creates nothing',
    body: analyzeBody,
    response: analyzeSchema,
    async handler(ctx) {
      const b = ctx.body;
      const url = repository(ctx, b.repository_url, 'repository_url');
      if (b.resource_id) await checkResource(ctx, ctx.deps.dataSource.manager, b.resource_id);
      await checkCredential(ctx, b.credential_id);
      const result = await analyze(ctx, {
        workspaceUuid: ctx.caller.workspaceUuid,
        repositoryUrl: url,
        branch: b.branch,
        composePath: b.compose_path ?? '.',
        credentialId: b.credential_id ?? null,
      });
      return { commit_sha: result.commitSha, manifest: result.manifest, warnings: result.warnings };
    },
  }),
  route<{}, Page, unknown>({
    method: 'get',
    path: '/stacks',
    requires: 'stacks.read',
    tag: TAG,
    paginated: true,
    summary: 'List the stacks of the workspace, newest first, with services, latest deployment and totals',
    response: stackListSchema,
    async handler(ctx) {
      const list = await pageOf(
        ctx,
        (
          await whereVisible(
            ctx,
            ctx.deps.dataSource.manager
              .createQueryBuilder(Stack, 's')
              .where('s.workspace_uuid = :workspace', { workspace: ctx.caller.workspaceUuid }),
            's.project_id',
          )
        )
          .orderBy('s.created_at', 'DESC')
          .addOrderBy('s.uuid', 'DESC'),
      );
      return stackViews(ctx.deps.dataSource.manager, ctx.caller.workspaceUuid, list);
    },
  }),
  route<{}, {}, yup.InferType<typeof createBody>>({
    method: 'post',
    path: '/stacks',
    requires: 'stacks.write',
    tag: TAG,
    status: 201,
    audit: 'stack.create',
    summary: 'Create a stack from a compose file (values for every required variable) and start its first deployment',
    body: createBody,
    response: stackSchema,
    async handler(ctx) {
      const b = ctx.body;
      const url = repository(ctx, b.repository_url, 'repository_url');
      await checkPlacement(ctx, ctx.deps.dataSource.manager, { resourceId: b.resource_id, projectId: b.project_id });
      await checkCredential(ctx, b.credential_id);
      const taken = await one(ctx.deps.dataSource, `SELECT 1 FROM stacks WHERE workspace_uuid = $1 AND name = $2`, [
        ctx.caller.workspaceUuid,
        b.name,
      ]);
      if (taken) throw conflict(`a stack named "${b.name}" already exists in this workspace`);
      const composePathValue = b.compose_path ?? '.';
      const result = await analyze(ctx, {
        workspaceUuid: ctx.caller.workspaceUuid,
        repositoryUrl: url,
        branch: b.branch,
        composePath: composePathValue,
        credentialId: b.credential_id ?? null,
      });
      const values = (b.variables ?? {}) as Record<string, string>;
      checkVariables(result.manifest, values);
      const uuid = randomUUID();
      const { stack, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        await checkPlacement(ctx, m, { resourceId: b.resource_id, projectId: b.project_id });
        const [row] = await m.query(
          `INSERT INTO stacks (uuid, workspace_uuid, project_id, resource_uuid, name, label, compose_path, repository, branch, auto_deploy_enabled,
                               credential_id, manifest, variables_sealed)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (workspace_uuid, name) DO NOTHING RETURNING uuid`,
          [
            uuid,
            ctx.caller.workspaceUuid,
            b.project_id ?? null,
            b.resource_id,
            b.name,
            b.label ?? b.name,
            composePathValue,
            url,
            b.branch,
            b.auto_deploy_enabled ?? false,
            b.credential_id ?? null,
            JSON.stringify(result.manifest),
            ctx.deps.secretBox.seal(JSON.stringify(values)),
          ],
        );
        if (!row) throw conflict(`a stack named "${b.name}" already exists in this workspace`);
        const op = await startDeployment(ctx, m, uuid);
        await recordAudit(m, ctx, { resourceUuid: uuid, before: null, after: await snapshot(m, 'stacks', uuid) });
        return { stack: await view(ctx, m, uuid), operation: op };
      });
      await ctx.deps.outbox.dispatch(operation);
      ctx.koa.set('Location', `/api/v1/stacks/${uuid}`);
      return stack;
    },
  }),
  route<{ uuid: string }>({
    method: 'get',
    path: '/stacks/{uuid}',
    requires: 'stacks.read',
    tag: TAG,
    summary: 'Show a stack: computed state, services, latest deployment, totals',
    response: stackSchema,
    async handler(ctx) {
      return view(ctx, ctx.deps.dataSource.manager, ctx.params.uuid);
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof updateBody>>({
    method: 'put',
    path: '/stacks/{uuid}',
    requires: 'stacks.write',
    tag: TAG,
    audit: 'stack.update',
    summary: "Update a stack's label or project (the codename is fixed)",
    body: updateBody,
    response: stackSchema,
    async handler(ctx) {
      return ctx.deps.dataSource.transaction(async (m) => {
        const s = await findStack(ctx, ctx.params.uuid, m, true);
        if (ctx.body.project_id !== undefined)
          await checkPlacement(ctx, m, { resourceId: s.resource_uuid, projectId: ctx.body.project_id });
        const before = await snapshot(m, 'stacks', s.uuid);
        await m.query(`UPDATE stacks SET label = $2, project_id = $3, updated_at = now() WHERE uuid = $1`, [
          s.uuid,
          ctx.body.label ?? s.label,
          ctx.body.project_id === undefined ? s.project_id : ctx.body.project_id,
        ]);
        await recordAudit(m, ctx, { resourceUuid: s.uuid, before, after: await snapshot(m, 'stacks', s.uuid) });
        return view(ctx, m, s.uuid);
      });
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof deploymentBody>>({
    method: 'put',
    path: '/stacks/{uuid}/deployment',
    requires: 'stacks.write',
    tag: TAG,
    audit: 'stack.update_deployment',
    summary:
      'Update the tracked branch, auto-deploy, repository and stored credential (credential_id); the next deployment uses them',
    body: deploymentBody,
    response: stackSchema,
    async handler(ctx) {
      const b = ctx.body;
      const url = b.repository === undefined ? undefined : repository(ctx, b.repository, 'repository');
      await checkCredential(ctx, b.credential_id);
      return ctx.deps.dataSource.transaction(async (m) => {
        const s = await findStack(ctx, ctx.params.uuid, m, true);
        const before = await snapshot(m, 'stacks', s.uuid);
        await m.query(
          `UPDATE stacks SET branch = $2, auto_deploy_enabled = $3, repository = $4, credential_id = $5, updated_at = now() WHERE uuid = $1`,
          [
            s.uuid,
            b.branch ?? s.branch,
            b.auto_deploy_enabled ?? s.auto_deploy_enabled,
            url ?? s.repository,
            b.credential_id === undefined ? s.credential_id : b.credential_id,
          ],
        );
        await recordAudit(m, ctx, { resourceUuid: s.uuid, before, after: await snapshot(m, 'stacks', s.uuid) });
        return view(ctx, m, s.uuid);
      });
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof redeployBody>>({
    method: 'post',
    path: '/stacks/{uuid}/deployments',
    requires: 'stacks.write',
    tag: TAG,
    status: 202,
    audit: 'stack.deploy',
    summary: 'Deploy the tracked branch again (optionally with new variable values); 409 while a deployment runs',
    body: redeployBody,
    response: stackSchema,
    async handler(ctx) {
      const { stack, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        const s = await findStack(ctx, ctx.params.uuid, m, true);
        const before = await snapshot(m, 'stacks', s.uuid);
        if (ctx.body.variables) {
          const [row] = await m.query(`SELECT variables_sealed FROM stacks WHERE uuid = $1`, [s.uuid]);
          const merged = { ...JSON.parse(ctx.deps.secretBox.open(row.variables_sealed)), ...ctx.body.variables };
          await m.query(`UPDATE stacks SET variables_sealed = $2, updated_at = now() WHERE uuid = $1`, [
            s.uuid,
            ctx.deps.secretBox.seal(JSON.stringify(merged)),
          ]);
        }
        const op = await startDeployment(ctx, m, s.uuid);
        // The diff shows new variable values as a redacted variables_sealed change; a plain redeploy's diff is empty.
        await recordAudit(m, ctx, { resourceUuid: s.uuid, before, after: await snapshot(m, 'stacks', s.uuid) });
        return { stack: await view(ctx, m, s.uuid), operation: op };
      });
      await ctx.deps.outbox.dispatch(operation);
      return stack;
    },
  }),
  route<{ uuid: string }>({
    method: 'delete',
    path: '/stacks/{uuid}',
    requires: 'stacks.write',
    tag: TAG,
    status: 204,
    audit: 'stack.delete',
    summary: 'Delete a stack with its services (its apps and add-on items); 409 while a deployment runs',
    async handler(ctx) {
      const operation = await ctx.deps.dataSource.transaction(async (m) => {
        const s = await findStack(ctx, ctx.params.uuid, m, true);
        const running = await one(
          m,
          `SELECT 1 FROM stack_deployments WHERE stack_uuid = $1 AND state NOT IN ('completed', 'failed')`,
          [s.uuid],
        );
        if (running) throw conflict('a deployment of this stack is in progress; delete it when it has finished');
        const items = await rows<{ uuid: string }>(m, `SELECT uuid FROM stack_items WHERE stack_uuid = $1`, [s.uuid]);
        const uuids = items.map((i) => i.uuid);
        const before = await snapshot(m, 'stacks', s.uuid);
        await m.query(`DELETE FROM resource_allocations WHERE owner_uuid = ANY($1::uuid[])`, [uuids]);
        await m.query(`DELETE FROM apps WHERE uuid = ANY($1::uuid[])`, [uuids]);
        await m.query(`DELETE FROM stacks WHERE uuid = $1`, [s.uuid]);
        await recordAudit(m, ctx, { resourceUuid: s.uuid, before, after: null });
        return ctx.deps.outbox.enqueue(m, {
          operation: 'stack-delete',
          workflow: 'stackCleanup',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: s.uuid,
          args: [{ itemUuids: uuids }],
        });
      });
      await ctx.deps.outbox.dispatch(operation);
      return undefined;
    },
  }),
];
