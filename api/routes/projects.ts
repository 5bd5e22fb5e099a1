import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { columnsOf } from '../../entities/columns';
import { Project, ProjectRestriction } from '../../entities/project';
import { one, rows } from '../../entities/sql';
import * as yup from 'yup';
import { assertProjectVisible } from '../access';
import { recordAudit, snapshot } from '../audit';
import { pageOf, type Page } from '../pagination';
import { whereVisible } from '../visible-projects';
import { conflict, notFound, unprocessable } from '../problem';
import { route, type AnyRouteContext } from '../route';
import { arr, obj, oneOf, str, uuid } from '../schemas/common';
import { projectSchema, projectViews, restrictionSchema, restrictionView } from '../views/projects';

const TAG = 'projects';

const projectBody = {
  name: str().trim().min(1).max(100),
  description: str().max(1000),
  resource_ids: arr(uuid().required()).max(100),
};
const createBody = obj({ ...projectBody, name: projectBody.name.required() });
const updateBody = obj(projectBody);
const restrictionBody = obj({
  subject_type: oneOf(['user', 'role'] as const).required(),
  user_uuid: uuid().when('subject_type', {
    is: 'user',
    then: (s) => s.required('user_uuid is required when subject_type is user'),
    otherwise: (s) => s.test('absent', 'user_uuid is only for subject_type user', (v) => v === undefined),
  }),
  role_name: str().when('subject_type', {
    is: 'role',
    then: (s) => s.required('role_name is required when subject_type is role'),
    otherwise: (s) => s.test('absent', 'role_name is only for subject_type role', (v) => v === undefined),
  }),
});

type Ctx = AnyRouteContext;

/** The project, if it exists in the caller's workspace and is not closed to the caller. */
export async function findProject(
  ctx: Ctx,
  projectUuid: string,
  db: EntityManager = ctx.deps.dataSource.manager,
): Promise<Project> {
  const row = await db.findOneBy(Project, { uuid: projectUuid, workspace_uuid: ctx.caller.workspaceUuid });
  if (!row) throw notFound('project');
  await assertProjectVisible(ctx, row.uuid, 'project');
  return row;
}

async function assignResources(ctx: Ctx, m: EntityManager, projectUuid: string, resourceIds: string[]): Promise<void> {
  const ids = [...new Set(resourceIds)];
  const found: Array<{ uuid: string }> = await m.query(
    `SELECT uuid FROM compute_resources WHERE workspace_uuid = $1 AND uuid = ANY($2::uuid[])`,
    [ctx.caller.workspaceUuid, ids],
  );
  const missing = ids.filter((id) => !found.some((f) => f.uuid === id));
  if (missing.length > 0) {
    throw unprocessable(
      `compute resource not found in this workspace: ${missing.join(', ')}`,
      missing.map((id) => ({
        path: 'body.resource_ids',
        message: `${id} is not a compute resource of this workspace`,
      })),
    );
  }
  await m.query(`DELETE FROM project_resources WHERE project_uuid = $1 AND NOT (resource_uuid = ANY($2::uuid[]))`, [
    projectUuid,
    ids,
  ]);
  await m.query(
    `INSERT INTO project_resources (project_uuid, resource_uuid) SELECT $1, unnest($2::uuid[]) ON CONFLICT DO NOTHING`,
    [projectUuid, ids],
  );
}

async function view(ctx: Ctx, m: EntityManager, row: Project) {
  return (await projectViews(m, ctx.caller.workspaceUuid, [row]))[0]!;
}

function assertActive(p: Project): void {
  if (p.state === 'deleting') throw conflict('the project is being deleted');
}

export const projectRoutes = [
  route<{}, Page, unknown>({
    method: 'get',
    path: '/projects',
    requires: 'projects.read',
    tag: TAG,
    paginated: true,
    summary: 'List the projects of the workspace, newest first',
    response: yup.array(projectSchema),
    async handler(ctx) {
      const rows = await pageOf(
        ctx,
        (
          await whereVisible(
            ctx,
            ctx.deps.dataSource.manager
              .createQueryBuilder(Project, 'p')
              .where('p.workspace_uuid = :workspace', { workspace: ctx.caller.workspaceUuid }),
            'p.uuid',
          )
        )
          .orderBy('p.created_at', 'DESC')
          .addOrderBy('p.uuid', 'DESC'),
      );
      return projectViews(ctx.deps.dataSource.manager, ctx.caller.workspaceUuid, rows);
    },
  }),
  route<{}, {}, yup.InferType<typeof createBody>>({
    method: 'post',
    path: '/projects',
    requires: 'projects.write',
    tag: TAG,
    status: 201,
    audit: 'project.create',
    summary: 'Create a project',
    body: createBody,
    response: projectSchema,
    async handler(ctx) {
      return ctx.deps.dataSource.transaction(async (m) => {
        const uuid = randomUUID();
        const row = await one<Project>(
          m,
          `INSERT INTO projects (uuid, workspace_uuid, name, description) VALUES ($1, $2, $3, $4)
           ON CONFLICT (workspace_uuid, name) DO NOTHING
           RETURNING ${columnsOf(Project)}`,
          [uuid, ctx.caller.workspaceUuid, ctx.body.name, ctx.body.description ?? ''],
        );
        if (!row) throw conflict(`a project named "${ctx.body.name}" already exists in this workspace`);
        if (ctx.body.resource_ids) await assignResources(ctx, m, uuid, ctx.body.resource_ids);
        await recordAudit(m, ctx, { resourceUuid: uuid, before: null, after: await snapshot(m, 'projects', uuid) });
        ctx.koa.set('Location', `/api/v1/projects/${uuid}`);
        return view(ctx, m, row);
      });
    },
  }),
  route<{ uuid: string }>({
    method: 'get',
    path: '/projects/{uuid}',
    requires: 'projects.read',
    tag: TAG,
    summary: 'Show a project',
    response: projectSchema,
    async handler(ctx) {
      return view(ctx, ctx.deps.dataSource.manager, await findProject(ctx, ctx.params.uuid));
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof updateBody>>({
    method: 'put',
    path: '/projects/{uuid}',
    requires: 'projects.write',
    tag: TAG,
    audit: 'project.update',
    summary: "Update a project's name, description and assigned compute resources",
    body: updateBody,
    response: projectSchema,
    async handler(ctx) {
      return ctx.deps.dataSource.transaction(async (m) => {
        const project = await findProject(ctx, ctx.params.uuid, m);
        assertActive(project);
        const before = await snapshot(m, 'projects', project.uuid);
        if (ctx.body.name !== undefined && ctx.body.name !== project.name) {
          const [taken] = await m.query(`SELECT 1 FROM projects WHERE workspace_uuid = $1 AND name = $2`, [
            ctx.caller.workspaceUuid,
            ctx.body.name,
          ]);
          if (taken) throw conflict(`a project named "${ctx.body.name}" already exists in this workspace`);
        }
        const row = await one<Project>(
          m,
          `UPDATE projects SET name = COALESCE($2, name), description = COALESCE($3, description), updated_at = now()
            WHERE uuid = $1 RETURNING ${columnsOf(Project)}`,
          [project.uuid, ctx.body.name ?? null, ctx.body.description ?? null],
        );
        if (ctx.body.resource_ids) await assignResources(ctx, m, project.uuid, ctx.body.resource_ids);
        await recordAudit(m, ctx, {
          resourceUuid: project.uuid,
          before,
          after: await snapshot(m, 'projects', project.uuid),
        });
        return view(ctx, m, row!);
      });
    },
  }),
  route<{ uuid: string }>({
    method: 'delete',
    path: '/projects/{uuid}',
    requires: 'projects.delete',
    tag: TAG,
    status: 202,
    audit: 'project.delete',
    summary: 'Delete a project: its resource assignments are released, then it is removed (poll GET until 404)',
    response: projectSchema,
    async handler(ctx) {
      const { project, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        const found = await findProject(ctx, ctx.params.uuid, m);
        const before = await snapshot(m, 'projects', found.uuid);
        const updated = await one<Project>(
          m,
          `UPDATE projects SET state = 'deleting', updated_at = now() WHERE uuid = $1 RETURNING ${columnsOf(Project)}`,
          [found.uuid],
        );
        const op = await ctx.deps.outbox.enqueue(m, {
          operation: 'project-delete',
          workflow: 'projectDelete',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: found.uuid,
          args: [{ projectUuid: found.uuid }],
        });
        await recordAudit(m, ctx, {
          resourceUuid: found.uuid,
          before,
          after: await snapshot(m, 'projects', found.uuid),
        });
        return { project: await view(ctx, m, updated!), operation: op };
      });
      await ctx.deps.outbox.dispatch(operation);
      return project;
    },
  }),
  route<{ uuid: string }>({
    method: 'get',
    path: '/projects/{uuid}/restrictions',
    requires: 'projects.read',
    tag: TAG,
    summary: 'List who may reach a project',
    response: yup.array(restrictionSchema),
    async handler(ctx) {
      const project = await findProject(ctx, ctx.params.uuid);
      const list = await ctx.deps.dataSource.manager.find(ProjectRestriction, {
        where: { project_uuid: project.uuid },
        order: { id: 'ASC' },
      });
      return list.map(restrictionView);
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof restrictionBody>>({
    method: 'post',
    path: '/projects/{uuid}/restrictions',
    requires: 'projects.write',
    tag: TAG,
    status: 201,
    audit: 'project.restriction_add',
    summary: 'Restrict a project to a member (subject_type user) or a role (subject_type role)',
    body: restrictionBody,
    response: restrictionSchema,
    async handler(ctx) {
      return ctx.deps.dataSource.transaction(async (m) => {
        const project = await findProject(ctx, ctx.params.uuid, m);
        assertActive(project);
        if (ctx.body.subject_type === 'user') {
          const [member] = await m.query(`SELECT 1 FROM members WHERE workspace_uuid = $1 AND user_uuid = $2`, [
            ctx.caller.workspaceUuid,
            ctx.body.user_uuid,
          ]);
          if (!member)
            throw unprocessable('user_uuid is not a member of this workspace', [
              { path: 'body.user_uuid', message: 'not a member of this workspace' },
            ]);
        } else {
          const [role] = await m.query(`SELECT 1 FROM roles WHERE workspace_uuid = $1 AND name = $2`, [
            ctx.caller.workspaceUuid,
            ctx.body.role_name,
          ]);
          if (!role)
            throw unprocessable('role_name is not a role of this workspace', [
              { path: 'body.role_name', message: 'no such role in this workspace' },
            ]);
        }
        const row = await one<ProjectRestriction>(
          m,
          `INSERT INTO project_restrictions (project_uuid, subject_type, user_uuid, role_name) VALUES ($1, $2, $3, $4)
           ON CONFLICT DO NOTHING RETURNING ${columnsOf(ProjectRestriction)}`,
          [project.uuid, ctx.body.subject_type, ctx.body.user_uuid ?? null, ctx.body.role_name ?? null],
        );
        if (!row) throw conflict('this restriction already exists');
        await recordAudit(m, ctx, {
          resourceUuid: project.uuid,
          before: null,
          after: restrictionView(row) as unknown as Record<string, unknown>,
        });
        return restrictionView(row);
      });
    },
  }),
  route<{ uuid: string; id: number }>({
    method: 'delete',
    path: '/projects/{uuid}/restrictions/{id}',
    requires: 'projects.write',
    tag: TAG,
    status: 204,
    audit: 'project.restriction_remove',
    summary: 'Remove a restriction',
    params: yup.object({ uuid: uuid().required(), id: yup.number().integer().min(1).max(2147483647).required() }),
    async handler(ctx) {
      return ctx.deps.dataSource.transaction(async (m) => {
        const project = await findProject(ctx, ctx.params.uuid, m);
        const deleted = await rows<ProjectRestriction>(
          m,
          `DELETE FROM project_restrictions WHERE project_uuid = $1 AND id = $2 RETURNING ${columnsOf(ProjectRestriction)}`,
          [project.uuid, ctx.params.id],
        );
        if (deleted.length === 0) throw notFound('restriction');
        await recordAudit(m, ctx, {
          resourceUuid: project.uuid,
          before: restrictionView(deleted[0]!) as unknown as Record<string, unknown>,
          after: null,
        });
        return undefined;
      });
    },
  }),
];
