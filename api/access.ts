import { canReachProject, type RestrictionRule } from '../domain/projects';
import { notFound } from './problem';
import type { RouteContext } from './route';

/**
 * Projects of the caller's workspace that a restriction closes to the caller. Resources
 * in them are answered 404 (hidden), never 403. Computed once per request.
 */
export async function hiddenProjects(ctx: RouteContext<unknown, unknown, unknown>): Promise<Set<string>> {
  const cached = ctx.koa.state.hiddenProjects;
  if (cached) return cached;
  const hidden = new Set<string>();
  if (!ctx.caller.builtinRole) {
    const rows: Array<RestrictionRule & { project_uuid: string }> = await ctx.deps.dataSource.query(
      `SELECT r.project_uuid, r.subject_type, r.user_uuid, r.role_name
         FROM project_restrictions r JOIN projects p ON p.uuid = r.project_uuid
        WHERE p.workspace_uuid = $1`,
      [ctx.caller.workspaceUuid],
    );
    const byProject = new Map<string, RestrictionRule[]>();
    for (const row of rows) {
      const list = byProject.get(row.project_uuid) ?? [];
      list.push(row);
      byProject.set(row.project_uuid, list);
    }
    for (const [project, rules] of byProject) if (!canReachProject(ctx.caller, rules)) hidden.add(project);
  }
  ctx.koa.state.hiddenProjects = hidden;
  return hidden;
}

/** 404 when the resource sits in a project closed to the caller. */
export async function assertProjectVisible(ctx: RouteContext<unknown, unknown, unknown>, projectUuid: string | null, what: string): Promise<void> {
  if (projectUuid && (await hiddenProjects(ctx)).has(projectUuid)) throw notFound(what);
}

/**
 * SQL fragment and parameter that keep rows of hidden projects out of a list:
 * `${column} IS NULL OR NOT (${column} = ANY($n))`.
 */
export async function visibleProjectsClause(ctx: RouteContext<unknown, unknown, unknown>, column: string, paramIndex: number): Promise<{ sql: string; param: string[] }> {
  const hidden = [...(await hiddenProjects(ctx))];
  return { sql: `(${column} IS NULL OR NOT (${column} = ANY($${paramIndex}::uuid[])))`, param: hidden };
}
