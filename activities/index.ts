import type { ActivityDeps } from './deps';
import { createEventActivities } from './events';
import { createProjectActivities } from './projects';
import { createStateActivities } from './state';
import { createVpcActivities } from './vpc';
import { createVpnActivities } from './vpn';
import { createWebhookActivities } from './webhooks';

export type { ActivityDeps } from './deps';

/** Every activity, built from its dependencies (the worker registers the result). */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createStateActivities(deps),
    ...createEventActivities(deps),
    ...createProjectActivities(deps),
    ...createVpcActivities(deps),
    ...createVpnActivities(deps),
    ...createWebhookActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
