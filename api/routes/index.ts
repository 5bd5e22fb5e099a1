import type { RouteDef } from '../route';
import { projectRoutes } from './projects';
import { resourceRoutes } from './resources';
import { bucketRoutes } from './buckets';
import { registryCredentialRoutes } from './registry-credentials';
import { stackRoutes } from './stacks';
import { staticSiteRoutes } from './static-sites';

/** The route table: every declared route of the API. */
export const routes: RouteDef[] = [...projectRoutes, ...resourceRoutes,
  ...bucketRoutes, ...registryCredentialRoutes, ...stackRoutes, ...staticSiteRoutes];
