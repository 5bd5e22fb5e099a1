import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
import { composePathProblem } from '../../domain/compose';
import { BRANCH } from '../../domain/git-urls';
import { typedStart, type Workflows } from '../../platform/workflow-starts';
import { STACK_NAME, VARIABLE_NAME, type AnalyzeInput, type AnalyzeResult } from '../../domain/stacks';
import { Stack } from '../../entities/stack';
import { assertProjectVisible } from '../access';
import { write } from '../commands/audited-write';
import {
  checkNewStack,
  checkVariables,
  createStack,
  deleteStack,
  redeployStack,
  updateStack,
  updateStackDeployment,
} from '../commands/stacks';
import type { Caller } from '../context';
import { checkCredential, checkRepository } from '../git-source';
import { pageOf, type Page } from '../pagination';
import { checkResource } from '../placement';
import { notFound, Problem, unprocessable } from '../problem';
import { route, type AnyRouteContext } from '../route';
import { bool, json, obj, str, uuid } from '../schemas/common';
import { analyzeSchema, stackListSchema, stackSchema, stackViews } from '../views/stacks';
import { newestVisible } from '../visible-projects';

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

/** The stack of the caller's workspace, in a project open to the caller, else 404. */
async function findStack(ctx: Ctx, uuid: string): Promise<Stack> {
  const row = await ctx.deps.dataSource.manager.findOneBy(Stack, { uuid, workspace_uuid: ctx.caller.workspaceUuid });
  if (!row) throw notFound('stack');
  await assertProjectVisible(ctx, row.project_uuid, 'stack');
  return row;
}

async function view(m: EntityManager, caller: Caller, stack: Stack) {
  return (await stackViews(m, caller.workspaceUuid, [stack]))[0]!;
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
      const url = checkRepository(ctx.deps.config, b.repository_url, 'repository_url');
      if (b.resource_id) await checkResource(ctx, ctx.deps.dataSource.manager, b.resource_id);
      await checkCredential(ctx.deps.dataSource.manager, ctx.caller.workspaceUuid, b.credential_id);
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
      const list = await pageOf(ctx, await newestVisible(ctx, Stack, 'project_uuid'));
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
      const repository = checkRepository(ctx.deps.config, b.repository_url, 'repository_url');
      await checkNewStack(ctx, b);
      const composePath = b.compose_path ?? '.';
      const { manifest } = await analyze(ctx, {
        workspaceUuid: ctx.caller.workspaceUuid,
        repositoryUrl: repository,
        branch: b.branch,
        composePath,
        credentialId: b.credential_id ?? null,
      });
      const variables = (b.variables ?? {}) as Record<string, string>;
      checkVariables(manifest, variables);
      const stack = await write(ctx, async (tx) =>
        view(
          tx.m,
          ctx.caller,
          await createStack(tx, ctx.caller, { ...b, repository, compose_path: composePath, manifest, variables }),
        ),
      );
      ctx.koa.set('Location', `/api/v1/stacks/${stack.uuid}`);
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
      return view(ctx.deps.dataSource.manager, ctx.caller, await findStack(ctx, ctx.params.uuid));
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
    handler: (ctx) =>
      write(ctx, async (tx) =>
        view(tx.m, ctx.caller, await updateStack(tx, ctx.caller, { ...ctx.body, uuid: ctx.params.uuid })),
      ),
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
    handler(ctx) {
      const b = ctx.body;
      const repository =
        b.repository === undefined ? undefined : checkRepository(ctx.deps.config, b.repository, 'repository');
      return write(ctx, async (tx) =>
        view(
          tx.m,
          ctx.caller,
          await updateStackDeployment(tx, ctx.caller, { ...b, repository, uuid: ctx.params.uuid }),
        ),
      );
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
    handler: (ctx) =>
      write(ctx, async (tx) =>
        view(
          tx.m,
          ctx.caller,
          await redeployStack(tx, ctx.caller, {
            uuid: ctx.params.uuid,
            variables: ctx.body.variables as Record<string, string> | undefined,
          }),
        ),
      ),
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
      await write(ctx, (tx) => deleteStack(tx, ctx.caller, { uuid: ctx.params.uuid }));
      return undefined;
    },
  }),
];
