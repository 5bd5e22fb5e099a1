import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
import { Project, ProjectRestriction } from '../../entities/project';
import { assertProjectVisible } from '../access';
import { write } from '../commands/audited-write';
import { addRestriction, createProject, deleteProject, removeRestriction, updateProject } from '../commands/projects';
import type { Caller } from '../context';
import { pageOf, type Page } from '../pagination';
import { notFound } from '../problem';
import { route, type AnyRouteContext } from '../route';
import { arr, obj, oneOf, str, uuid } from '../schemas/common';
import { projectSchema, projectViews, restrictionSchema, restrictionView } from '../views/projects';
import { newestVisible } from '../visible-projects';

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

async function view(m: EntityManager, caller: Caller, row: Project) {
  return (await projectViews(m, caller.workspaceUuid, [row]))[0]!;
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
      const list = await pageOf(ctx, await newestVisible(ctx, Project, 'uuid'));
      return projectViews(ctx.deps.dataSource.manager, ctx.caller.workspaceUuid, list);
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
      const project = await write(ctx, async (tx) =>
        view(tx.m, ctx.caller, await createProject(tx, ctx.caller, ctx.body)),
      );
      ctx.koa.set('Location', `/api/v1/projects/${project.uuid}`);
      return project;
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
      return view(ctx.deps.dataSource.manager, ctx.caller, await findProject(ctx, ctx.params.uuid));
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
    handler: (ctx) =>
      write(ctx, async (tx) =>
        view(tx.m, ctx.caller, await updateProject(tx, ctx.caller, { ...ctx.body, uuid: ctx.params.uuid })),
      ),
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
    handler: (ctx) =>
      write(ctx, async (tx) => view(tx.m, ctx.caller, await deleteProject(tx, ctx.caller, { uuid: ctx.params.uuid }))),
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
    handler: (ctx) =>
      write(ctx, async (tx) =>
        restrictionView(await addRestriction(tx, ctx.caller, { ...ctx.body, uuid: ctx.params.uuid })),
      ),
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
      await write(ctx, (tx) => removeRestriction(tx, ctx.caller, ctx.params));
      return undefined;
    },
  }),
];
