import type { Pool, QueryResultRow } from 'pg';
import type { DataSource, DeepPartial, EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';

/** Anything that runs SQL: a DataSource, an EntityManager (in or out of a transaction). */
export type Db = Pick<EntityManager, 'query'>;

/**
 * Rows of any statement. TypeORM's postgres driver answers UPDATE/DELETE with
 * [rows, rowCount]; SELECT and INSERT with rows. This hides the difference.
 */
export async function rows<T = any>(db: Db, sql: string, params: unknown[] = []): Promise<T[]> {
  const result: unknown = await db.query(sql, params);
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') {
    return result[0] as T[];
  }
  return result as T[];
}

export async function one<T = any>(db: Db, sql: string, params: unknown[] = []): Promise<T | undefined> {
  return (await rows<T>(db, sql, params))[0];
}

/**
 * Rows of a hot read as a named prepared statement on TypeORM's own pg pool, around its
 * query runner: PostgreSQL plans the statement once per connection instead of on every
 * request (the App statement of GET /apps/{uuid} plans in about 4 ms and runs in 0.3 ms,
 * docs/performance.md), and TypeORM's per-statement runner is skipped. Only for reads
 * outside a transaction; `name` must be unique to `sql`. The rows are what `rows` would
 * give (the same pg type parsers).
 */
export async function preparedRows<T = any>(
  ds: DataSource,
  name: string,
  sql: string,
  params: unknown[],
): Promise<T[]> {
  const pool = (ds.driver as PostgresDriver).master as Pool;
  return (await pool.query<T & QueryResultRow>({ name, text: sql, values: params })).rows;
}

/** Column values for a write: a value, or an SQL expression (`{ last_commit_at: () => 'now()' }`). */
export type Changes<E> = { [K in keyof E]?: E[K] | (() => string) };

/**
 * INSERT .. RETURNING * through TypeORM's query builder: the row as written (defaults
 * included) as the entity, without reading it back; undefined when `ignoreConflict` skipped
 * it (true: any conflict; a constraint name or the columns of a unique index: that one only).
 * (`values` is cast: the builder's deep-partial type refuses JSON columns typed `unknown`.)
 */
export async function insertReturning<E extends ObjectLiteral>(
  m: EntityManager,
  target: EntityTarget<E>,
  values: Changes<E>,
  options: { ignoreConflict?: true | string | string[] } = {},
): Promise<E | undefined> {
  const insert = m
    .createQueryBuilder()
    .insert()
    .into(target)
    .values(values as QueryDeepPartialEntity<E>);
  // ON CONFLICT .. DO NOTHING: orUpdate with nothing to overwrite names the conflict target.
  if (options.ignoreConflict === true) insert.orIgnore();
  else if (options.ignoreConflict) insert.orUpdate([], options.ignoreConflict);
  const result = await insert.returning('*').updateEntity(false).execute();
  const row = (result.raw as E[])[0];
  return row ? m.create(target, row as DeepPartial<E>) : undefined;
}

/**
 * UPDATE .. SET changes WHERE condition RETURNING * through the query builder: the rows as
 * changed, as entities; none when the condition (a guard such as `state IN (:...from)`)
 * matched nothing. Fields left undefined keep their value; a value may be an SQL expression
 * (`{ generation: () => 'generation + 1' }`).
 */
export async function updateWhereReturning<E extends ObjectLiteral>(
  m: EntityManager,
  target: EntityTarget<E>,
  changes: Changes<E>,
  where: string,
  params: ObjectLiteral,
): Promise<E[]> {
  const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
  const result = await m
    .createQueryBuilder()
    .update(target)
    .set(set as QueryDeepPartialEntity<E>)
    .where(where, params)
    .returning('*')
    .updateEntity(false)
    .execute();
  return (result.raw as E[]).map((row) => m.create(target, row as DeepPartial<E>));
}

/** UPDATE .. RETURNING * of one row by uuid through the query builder: the row as changed, as the entity. */
export async function updateReturning<E extends ObjectLiteral>(
  m: EntityManager,
  target: EntityTarget<E>,
  uuid: string,
  changes: Partial<E>,
): Promise<E | undefined> {
  return (await updateWhereReturning(m, target, changes, 'uuid = :uuid', { uuid }))[0];
}

/** DELETE .. WHERE condition RETURNING * through the query builder: the rows as they were, as entities. */
export async function deleteReturning<E extends ObjectLiteral>(
  m: EntityManager,
  target: EntityTarget<E>,
  where: string,
  params: ObjectLiteral,
): Promise<E[]> {
  const result = await m.createQueryBuilder().delete().from(target).where(where, params).returning('*').execute();
  return (result.raw as E[]).map((row) => m.create(target, row as DeepPartial<E>));
}
