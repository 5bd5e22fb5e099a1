import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
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
