import type { EntityManager } from 'typeorm';

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
