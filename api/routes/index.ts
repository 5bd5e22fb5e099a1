import type { RouteDef } from '../route';
import { domainRoutes } from './domains';
import { previewRoutes } from './previews';
import { projectRoutes } from './projects';
import { resourceRoutes } from './resources';

/** The route table: every declared route of the API. */
export const routes: RouteDef[] = [...projectRoutes, ...resourceRoutes,
  ...domainRoutes, ...previewRoutes];
