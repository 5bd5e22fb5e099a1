/**
 * Placement: may a workload (app, clone, service, bucket, stack, preview environment) of a
 * project, or of no project, run on a compute resource? The one home of the rule; the
 * facts are loaded once by api/placement.ts.
 *
 * A resource assigned to projects takes only workloads of one of them (CLN-04, PRV-09). A
 * workload of no project is refused there: it belongs to the shared pool (PRJ-02), and its
 * project is never inferred from the resource (BKT-07). An unassigned resource takes any.
 */

/** Why a placement is refused; `field` is the request field at fault. */
export type PlacementRefusal =
  | { reason: 'no_resource'; field: 'resource_id'; title: string; message: string }
  | { reason: 'no_project' | 'project_deleting'; field: 'project_id'; title: string; message: string }
  | {
      reason: 'assigned_to_other_projects' | 'assigned_needs_project';
      field: 'project_id';
      title: string;
      message: string;
      projects: string[];
    };

/** A project as the caller sees it: null when it is not the workspace's or a restriction hides it from the caller. */
export type ProjectFact = { state: string } | null;

export interface PlacementFacts {
  /** The projects the resource is assigned to; null when it is not a compute resource of the workspace. */
  resourceProjects: readonly string[] | null;
  /** The workload's project (as sent, or kept); null: none. */
  projectId: string | null;
  /** What the caller sees of that project; read only when projectId is set. */
  project: ProjectFact;
}

/** The project named for a workload must be the workspace's, open to the caller, and not being deleted. */
export function projectRefusal(project: ProjectFact): PlacementRefusal | null {
  if (!project) {
    return {
      reason: 'no_project',
      field: 'project_id',
      title: 'project_id is not a project of this workspace',
      message: 'no such project in this workspace',
    };
  }
  if (project.state !== 'active')
    return {
      reason: 'project_deleting',
      field: 'project_id',
      title: 'the project is being deleted',
      message: 'project is being deleted',
    };
  return null;
}

/** CLN-04, PRV-09: a resource assigned to projects takes only workloads of one of them (none is not one of them). */
export function assignmentRefusal(
  resourceProjects: readonly string[],
  projectId: string | null,
): PlacementRefusal | null {
  if (resourceProjects.length === 0) return null;
  if (projectId && resourceProjects.includes(projectId)) return null;
  const projects = [...resourceProjects].sort();
  const oneOf = `must be one of the resource's projects: ${projects.join(', ')}`;
  return projectId
    ? {
        reason: 'assigned_to_other_projects',
        field: 'project_id',
        projects,
        message: `the resource is assigned to other projects; ${oneOf}`,
        title: 'the compute resource is assigned to other projects than the target project',
      }
    : {
        reason: 'assigned_needs_project',
        field: 'project_id',
        projects,
        message: `the resource is assigned to projects; ${oneOf}`,
        title: 'the compute resource is assigned to projects: a workload on it needs project_id, one of them',
      };
}

/** The whole rule, first refusal wins: the resource, then the project, then the assignment. */
export function placementRefusal(facts: PlacementFacts): PlacementRefusal | null {
  if (!facts.resourceProjects) {
    return {
      reason: 'no_resource',
      field: 'resource_id',
      title: 'resource_id is not a compute resource of this workspace',
      message: 'no such compute resource in this workspace',
    };
  }
  return (
    (facts.projectId ? projectRefusal(facts.project) : null) ??
    assignmentRefusal(facts.resourceProjects, facts.projectId)
  );
}
