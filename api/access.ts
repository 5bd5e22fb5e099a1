import { canReachProject, type RestrictionRule } from '../domain/projects';
import type { ApiDeps, Caller } from './context';
import { notFound } from './problem';

/**
 * Who asks, and with which deps: what the project checks need of a request. A route's
 * context is one; a command builds one per call. Hidden projects are computed once per scope.
 */
export interface Scope {
  caller: Caller;
  deps: Pick<ApiDeps, 'dataSource'>;
}

const hiddenOf = new WeakMap<Scope, Promise<Set<string>>>();

/**
 * Projects of the caller's workspace that a restriction closes to the caller. Resources
 * in them are answered 404 (hidden), never 403. Computed once per scope (a request, a command).
 */
export function hiddenProjects(scope: Scope): Promise<Set<string>> {
  let hidden = hiddenOf.get(scope);
  if (!hidden) {
    hidden = loadHiddenProjects(scope);
    hiddenOf.set(scope, hidden);
  }
  return hidden;
}

async function loadHiddenProjects({ caller, deps }: Scope): Promise<Set<string>> {
  const hidden = new Set<string>();
  if (!caller.builtinRole) {
    const rows: Array<RestrictionRule & { project_uuid: string }> = await deps.dataSource.query(
      `SELECT r.project_uuid, r.subject_type, r.user_uuid, r.role_name
         FROM project_restrictions r JOIN projects p ON p.uuid = r.project_uuid
        WHERE p.workspace_uuid = $1`,
      [caller.workspaceUuid],
    );
    const byProject = new Map<string, RestrictionRule[]>();
    for (const row of rows) {
      const list = byProject.get(row.project_uuid) ?? [];
      list.push(row);
      byProject.set(row.project_uuid, list);
    }
    for (const [project, rules] of byProject) if (!canReachProject(caller, rules)) hidden.add(project);
  }
  return hidden;
}

/** 404 when the resource sits in a project closed to the caller. */
export async function assertProjectVisible(ctx: Scope, projectUuid: string | null, what: string): Promise<void> {
  if (projectUuid && (await hiddenProjects(ctx)).has(projectUuid)) throw notFound(what);
}

/**
 * SQL fragment and parameter that keep rows of hidden projects out of a list:
 * `${column} IS NULL OR NOT (${column} = ANY($n))`.
 */
export async function visibleProjectsClause(
  ctx: Scope,
  column: string,
  paramIndex: number,
): Promise<{ sql: string; param: string[] }> {
  const hidden = [...(await hiddenProjects(ctx))];
  return { sql: `(${column} IS NULL OR NOT (${column} = ANY($${paramIndex}::uuid[])))`, param: hidden };
}
