import { APP_STATES, type AppState } from '../domain/apps';
import { moveState, type Transition } from '../entities/state-moves';
import type { DataSource, EntityManager } from 'typeorm';
import type { ActivityDeps } from './deps';

export { moveState, type MoveAlso, type StatefulTable, type StateOf, type Transition } from '../entities/state-moves';

/** Moves an app to `to` from whatever it reads, except `to` itself and `deleting` (a deleting app is never revived). */
export function moveAppTo(db: DataSource | EntityManager, uuid: string, to: AppState): Promise<boolean> {
  return moveState(db, { table: 'apps', uuid, from: APP_STATES.filter((s) => s !== to && s !== 'deleting'), to });
}

export function createStateActivities({ dataSource }: Pick<ActivityDeps, 'dataSource'>) {
  return {
    /** A guarded state move recorded in the audit log (source workflow): see moveState. */
    async transition(t: Transition): Promise<boolean> {
      return moveState(dataSource, t);
    },
  };
}
