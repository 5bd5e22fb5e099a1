import type { EntityTarget, ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { hiddenProjects, type assertProjectVisible } from './access';

type Scope = Parameters<typeof assertProjectVisible>[0];

/**
 * Keeps rows of projects closed to the caller out of a query builder's list (the query
 * builder's form of `visibleProjectsClause`): `column` is the row's project (null: none).
 */
export async function whereVisible<E extends ObjectLiteral>(
  scope: Scope,
  qb: SelectQueryBuilder<E>,
  column: string,
): Promise<SelectQueryBuilder<E>> {
  const hidden = [...(await hiddenProjects(scope))];
  if (hidden.length === 0) return qb;
  return qb.andWhere(`(${column} IS NULL OR NOT (${column} = ANY(CAST(:hiddenProjects AS uuid[]))))`, {
    hiddenProjects: hidden,
  });
}

/**
 * The rows of an entity in the caller's workspace, newest first, without those of projects
 * closed to the caller: `project` is the row's project column (`uuid` for a project itself).
 */
export async function newestVisible<
  E extends ObjectLiteral & { workspace_uuid: string; created_at: Date; uuid: string },
>(scope: Scope, target: EntityTarget<E>, project: keyof E & string): Promise<SelectQueryBuilder<E>> {
  const qb = scope.deps.dataSource.manager
    .createQueryBuilder(target, 'r')
    .where('r.workspace_uuid = :workspace', { workspace: scope.caller.workspaceUuid });
  return (await whereVisible(scope, qb, `r.${project}`)).orderBy('r.created_at', 'DESC').addOrderBy('r.uuid', 'DESC');
}
