import type { RouteDef } from '../route';
import { addonRoutes } from './addons';
import { cronjobRoutes } from './cronjobs';
import { projectRoutes } from './projects';
import { serviceRoutes } from './services';
import { resourceRoutes } from './resources';

/** The route table: every declared route of the API. */
export const routes: RouteDef[] = [...projectRoutes, ...resourceRoutes, ...addonRoutes, ...serviceRoutes, ...cronjobRoutes];
