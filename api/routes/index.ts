import type { RouteDef } from '../route';
import { projectRoutes } from './projects';
import { resourceRoutes } from './resources';
import { webhookRoutes } from './webhooks';

/** The route table: every declared route of the API. */
export const routes: RouteDef[] = [...projectRoutes, ...resourceRoutes,
  ...webhookRoutes];
