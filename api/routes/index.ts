import type { RouteDef } from '../route';
import { appDeploymentRoutes } from './app-deployments';
import { appPortRoutes } from './app-ports';
import { appTlsRoutes } from './app-tls';
import { appVariableRoutes } from './app-variables';
import { appRoutes } from './apps';
import { projectRoutes } from './projects';
import { resourceRoutes } from './resources';

/** The route table: every declared route of the API. */
export const routes: RouteDef[] = [...projectRoutes, ...resourceRoutes,
  ...appRoutes, ...appDeploymentRoutes, ...appPortRoutes, ...appVariableRoutes, ...appTlsRoutes];
