import { randomUUID } from 'node:crypto';
import { In } from 'typeorm';
import { Member } from '../../entities/member';
import { ComputeResource } from '../../entities/compute-resource';
import { Project, ProjectResource, ProjectRestriction } from '../../entities/project';
import { Role } from '../../entities/role';
import { insertReturning, updateReturning } from '../../entities/sql';
import { assertProjectVisible } from '../access';
import type { Caller } from '../context';
import { conflict, notFound, unprocessable } from '../problem';
import { restrictionView } from '../views/projects';
import { snapshotOf, type Tx } from './audited-write';

export interface ProjectInput {
  name?: string;
  description?: string;
  resource_ids?: string[];
}

export interface RestrictionInput {
  uuid: string;
  subject_type: 'user' | 'role';
  user_uuid?: string;
  role_name?: string;
}

const nameTaken = (name: string) => conflict(`a project named "${name}" already exists in this workspace`);

/** The project, locked for the change: in the caller's workspace and open to the caller, else 404. */
async function projectForChange(tx: Tx, caller: Caller, uuid: string): Promise<Project> {
  const project = await tx.m.findOne(Project, {
    where: { uuid, workspace_uuid: caller.workspaceUuid },
    lock: { mode: 'pessimistic_write' },
  });
  if (!project) throw notFound('project');
  await assertProjectVisible({ caller, deps: tx.deps }, project.uuid, 'project');
  return project;
}

/** A project being deleted takes no change (409). */
function assertActive(p: Project): void {
  if (p.state === 'deleting') throw conflict('the project is being deleted');
}

/** The project's compute resources become exactly `resourceIds`, each a compute resource of the workspace (422 otherwise). */
async function assignResources(tx: Tx, caller: Caller, projectUuid: string, resourceIds: string[]): Promise<void> {
  const ids = [...new Set(resourceIds)];
  const found =
    ids.length === 0
      ? []
      : await tx.m.find(ComputeResource, {
          where: { workspace_uuid: caller.workspaceUuid, uuid: In(ids) },
          select: { uuid: true },
        });
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
  await tx.m
    .createQueryBuilder()
    .delete()
    .from(ProjectResource)
    .where('project_uuid = :projectUuid AND NOT (resource_uuid = ANY(CAST(:ids AS uuid[])))', { projectUuid, ids })
    .execute();
  if (ids.length === 0) return;
  await tx.m
    .createQueryBuilder()
    .insert()
    .into(ProjectResource)
    .values(ids.map((resource_uuid) => ({ project_uuid: projectUuid, resource_uuid })))
    .orIgnore()
    .execute();
}

/** POST /projects: a project with a name unique in the workspace, and its compute resources. */
export async function createProject(tx: Tx, caller: Caller, input: ProjectInput & { name: string }): Promise<Project> {
  // ON CONFLICT DO NOTHING: the uuid is fresh, so the one conflict possible is the name.
  const project = await insertReturning(
    tx.m,
    Project,
    {
      uuid: randomUUID(),
      workspace_uuid: caller.workspaceUuid,
      name: input.name,
      description: input.description ?? '',
    },
    { ignoreConflict: true },
  );
  if (!project) throw nameTaken(input.name);
  if (input.resource_ids) await assignResources(tx, caller, project.uuid, input.resource_ids);
  await tx.audit({ action: 'project.create', resourceUuid: project.uuid, before: null, after: snapshotOf(project) });
  return project;
}

/** PUT /projects/{uuid}: name (unique in the workspace), description and compute resources; 409 while it is being deleted. */
export async function updateProject(tx: Tx, caller: Caller, input: ProjectInput & { uuid: string }): Promise<Project> {
  const project = await projectForChange(tx, caller, input.uuid);
  assertActive(project);
  if (input.name !== undefined && input.name !== project.name) {
    if (await tx.m.existsBy(Project, { workspace_uuid: caller.workspaceUuid, name: input.name }))
      throw nameTaken(input.name);
  }
  const updated = (await updateReturning(tx.m, Project, project.uuid, {
    name: input.name ?? project.name,
    description: input.description ?? project.description,
  }))!;
  if (input.resource_ids) await assignResources(tx, caller, project.uuid, input.resource_ids);
  await tx.audit({
    action: 'project.update',
    resourceUuid: project.uuid,
    before: snapshotOf(project),
    after: snapshotOf(updated),
  });
  return updated;
}

/** DELETE /projects/{uuid}: the project moves to `deleting`; its workflow releases the assignments and removes it. */
export async function deleteProject(tx: Tx, caller: Caller, input: { uuid: string }): Promise<Project> {
  const project = await projectForChange(tx, caller, input.uuid);
  const updated = (await updateReturning(tx.m, Project, project.uuid, { state: 'deleting' }))!;
  await tx.enqueue({
    operation: 'project-delete',
    workflow: 'projectDelete',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: project.uuid,
    args: [{ projectUuid: project.uuid }],
  });
  await tx.audit({
    action: 'project.delete',
    resourceUuid: project.uuid,
    before: snapshotOf(project),
    after: snapshotOf(updated),
  });
  return updated;
}

/** The restriction's subject must be a member or a role of the workspace (422). */
async function checkSubject(tx: Tx, caller: Caller, input: RestrictionInput): Promise<void> {
  if (input.subject_type === 'user') {
    if (!(await tx.m.existsBy(Member, { workspace_uuid: caller.workspaceUuid, user_uuid: input.user_uuid })))
      throw unprocessable('user_uuid is not a member of this workspace', [
        { path: 'body.user_uuid', message: 'not a member of this workspace' },
      ]);
  } else if (!(await tx.m.existsBy(Role, { workspace_uuid: caller.workspaceUuid, name: input.role_name }))) {
    throw unprocessable('role_name is not a role of this workspace', [
      { path: 'body.role_name', message: 'no such role in this workspace' },
    ]);
  }
}

/** POST /projects/{uuid}/restrictions: the project is restricted to a member or a role; 409 when it already is. */
export async function addRestriction(tx: Tx, caller: Caller, input: RestrictionInput): Promise<ProjectRestriction> {
  const project = await projectForChange(tx, caller, input.uuid);
  assertActive(project);
  await checkSubject(tx, caller, input);
  const restriction = await insertReturning(
    tx.m,
    ProjectRestriction,
    {
      project_uuid: project.uuid,
      subject_type: input.subject_type,
      user_uuid: input.user_uuid ?? null,
      role_name: input.role_name ?? null,
    },
    { ignoreConflict: true },
  );
  if (!restriction) throw conflict('this restriction already exists');
  await tx.audit({
    action: 'project.restriction_add',
    resourceUuid: project.uuid,
    before: null,
    after: snapshotOf(restrictionView(restriction)),
  });
  return restriction;
}

/** DELETE /projects/{uuid}/restrictions/{id}: 404 when the project has no such restriction. */
export async function removeRestriction(tx: Tx, caller: Caller, input: { uuid: string; id: number }): Promise<void> {
  const project = await projectForChange(tx, caller, input.uuid);
  const deleted = await tx.m
    .createQueryBuilder()
    .delete()
    .from(ProjectRestriction)
    .where('project_uuid = :project AND id = :id', { project: project.uuid, id: input.id })
    .returning('*')
    .execute();
  const restriction = (deleted.raw as ProjectRestriction[])[0];
  if (!restriction) throw notFound('restriction');
  await tx.audit({
    action: 'project.restriction_remove',
    resourceUuid: project.uuid,
    before: snapshotOf(restrictionView(restriction)),
    after: null,
  });
}
