import { createAppActivities } from './apps';
import type { ActivityDeps } from './deps';
import { createEventActivities } from './events';
import { createProjectActivities } from './projects';
import { createStateActivities } from './state';

export type { ActivityDeps } from './deps';

/** Every activity, built from its dependencies (the worker registers the result). */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createStateActivities(deps),
    ...createEventActivities(deps),
    ...createProjectActivities(deps),
    ...createAppActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
