import type { EntityManager } from 'typeorm';
import { loadResources, type ResourceView } from './views/resources';
import { hiddenProjects } from './access';
import { unprocessable } from './problem';
import type { AnyRouteContext } from './route';

/**
 * Where a workload goes: a compute resource of the workspace and, only when sent, a
 * project of the workspace the caller can reach (never inferred). A resource assigned to
 * projects takes workloads of those projects only.
 */
export async function checkPlacement(ctx: AnyRouteContext, m: EntityManager,
  input: { resourceId: string; projectId: string | null | undefined; field?: string }): Promise<ResourceView> {
  const field = input.field ?? 'resource_id';
  const [resource] = await loadResources(m, ctx.caller.workspaceUuid, [input.resourceId]);
  if (!resource) {
    throw unprocessable(`${field} is not a compute resource of this workspace`, [{ path: `body.${field}`, message: 'no such compute resource in this workspace' }]);
  }
  if (input.projectId) await checkProject(ctx, m, input.projectId);
  if (resource.project_ids.length > 0 && input.projectId && !resource.project_ids.includes(input.projectId)) {
    throw unprocessable('the compute resource is assigned to other projects', [{ path: 'body.project_id', message: `must be one of the resource's projects: ${resource.project_ids.join(', ')}` }]);
  }
  return resource;
}

/** project_id must name an active project of the workspace that the caller can reach. */
export async function checkProject(ctx: AnyRouteContext, m: EntityManager, projectId: string): Promise<void> {
  const [project] = await m.query(`SELECT state FROM projects WHERE uuid = $1 AND workspace_uuid = $2`, [projectId, ctx.caller.workspaceUuid]);
  if (!project || (await hiddenProjects(ctx)).has(projectId)) {
    throw unprocessable('project_id is not a project of this workspace', [{ path: 'body.project_id', message: 'no such project' }]);
  }
  if (project.state !== 'active') throw unprocessable('the project is being deleted', [{ path: 'body.project_id', message: 'project is being deleted' }]);
}
