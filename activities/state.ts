import { rows } from '../entities/sql';
import type { ActivityDeps } from './deps';

/** Tables whose rows move through states, and the column holding the state. */
export const STATEFUL_TABLES = {
  projects: 'state',
  apps: 'state',
  addons: 'state',
} as const;

export type StatefulTable = keyof typeof STATEFUL_TABLES;

export interface Transition {
  table: StatefulTable;
  uuid: string;
  /** The move happens only from one of these states. */
  from: readonly string[];
  to: string;
}

export function createStateActivities({ dataSource }: Pick<ActivityDeps, 'dataSource'>) {
  return {
    /**
     * A guarded state move: `UPDATE .. WHERE state = ANY(from)`. Idempotent: a retry after
     * the move succeeded changes nothing and answers false.
     */
    async transition(t: Transition): Promise<boolean> {
      const column = STATEFUL_TABLES[t.table];
      if (!column) throw new Error(`unknown stateful table ${t.table}`);
      const moved = await rows(dataSource,
        `UPDATE ${t.table} SET ${column} = $3, updated_at = now() WHERE uuid = $1 AND ${column} = ANY($2::text[]) RETURNING uuid`,
        [t.uuid, t.from, t.to]);
      return moved.length > 0;
    },
  };
}
