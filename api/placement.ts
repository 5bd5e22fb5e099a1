import {
  assignmentRefusal,
  placementRefusal,
  projectRefusal,
  type PlacementRefusal,
  type ProjectFact,
} from '../domain/placement';
import { one, rows, type Db } from '../entities/sql';
import { hiddenProjects } from './access';
import { unprocessable } from './problem';

/** Who asks: what the project check needs of a request or a command. */
type Ctx = Parameters<typeof hiddenProjects>[0];

/** Where each field of a placement sits in the request (problem paths). */
export interface PlacementPaths {
  resource?: string;
  project?: string;
}

/** The projects a compute resource of the workspace is assigned to; null when the workspace has no such resource. */
export async function resourceProjects(m: Db, workspaceUuid: string, resourceUuid: string): Promise<string[] | null> {
  const resource = await one<{ project_ids: string[] }>(
    m,
    `SELECT COALESCE(array_agg(pr.project_uuid::text ORDER BY pr.project_uuid) FILTER (WHERE pr.project_uuid IS NOT NULL), '{}') AS project_ids
       FROM compute_resources c LEFT JOIN project_resources pr ON pr.resource_uuid = c.uuid
      WHERE c.uuid = $1 AND c.workspace_uuid = $2 GROUP BY c.uuid`,
    [resourceUuid, workspaceUuid],
  );
  return resource ? resource.project_ids : null;
}

/** A project of the workspace as the caller sees it (null when absent or hidden by a restriction). */
async function projectFact(ctx: Ctx, m: Db, projectId: string): Promise<ProjectFact> {
  const project = await one<{ state: string }>(
    m,
    `SELECT state FROM projects WHERE uuid = $1 AND workspace_uuid = $2`,
    [projectId, ctx.caller.workspaceUuid],
  );
  if (!project || (await hiddenProjects(ctx)).has(projectId)) return null;
  return project;
}

function refuse(refusal: PlacementRefusal, paths: PlacementPaths): never {
  const path =
    refusal.field === 'resource_id' ? (paths.resource ?? 'body.resource_id') : (paths.project ?? 'body.project_id');
  throw unprocessable(refusal.title, [{ path, message: refusal.message }]);
}

/**
 * Where a workload goes (domain/placement.ts): a compute resource of the workspace and, only
 * when given, a project of the workspace the caller can reach (never inferred); a resource
 * assigned to projects takes workloads of one of them only. 422 otherwise.
 */
export async function checkPlacement(
  ctx: Ctx,
  m: Db,
  input: { resourceId: string; projectId: string | null | undefined; paths?: PlacementPaths },
): Promise<void> {
  const projectId = input.projectId ?? null;
  const refusal = placementRefusal({
    resourceProjects: await resourceProjects(m, ctx.caller.workspaceUuid, input.resourceId),
    projectId,
    project: projectId ? await projectFact(ctx, m, projectId) : null,
  });
  if (refusal) refuse(refusal, input.paths ?? {});
}

/** A compute resource of the workspace, with no workload placed yet (stacks/analyze). */
export async function checkResource(ctx: Ctx, m: Db, resourceId: string, path = 'body.resource_id'): Promise<void> {
  if (!(await resourceProjects(m, ctx.caller.workspaceUuid, resourceId))) {
    refuse(placementRefusal({ resourceProjects: null, projectId: null, project: null })!, { resource: path });
  }
}

/** project_id must name an active project of the workspace that the caller can reach (workloads with no compute resource). */
export async function checkProject(ctx: Ctx, m: Db, projectId: string, path = 'body.project_id'): Promise<void> {
  const refusal = projectRefusal(await projectFact(ctx, m, projectId));
  if (refusal) refuse(refusal, { project: path });
}

/**
 * Only the assignment part, for a resource and project already checked (preview settings
 * and environments, PRV-09): the refusal is reported at `path`.
 */
export async function checkAssignment(
  m: Db,
  resourceUuid: string,
  projectId: string | null,
  path: string,
): Promise<void> {
  const assigned = await rows<{ project_uuid: string }>(
    m,
    `SELECT project_uuid FROM project_resources WHERE resource_uuid = $1 ORDER BY project_uuid`,
    [resourceUuid],
  );
  const refusal = assignmentRefusal(
    assigned.map((a) => a.project_uuid),
    projectId,
  );
  if (refusal) refuse({ ...refusal, title: `${refusal.title} (resource ${resourceUuid})` }, { project: path });
}
