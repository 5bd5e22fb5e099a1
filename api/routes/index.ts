import type { RouteDef } from '../route';
import { auditRoutes } from './audit';
import { domainRoutes } from './domains';
import { previewRoutes } from './previews';
import { addonRoutes } from './addons';
import { cronjobRoutes } from './cronjobs';
import { appDeploymentRoutes } from './app-deployments';
import { appLogRoutes } from './app-logs';
import { appPortRoutes } from './app-ports';
import { appTlsRoutes } from './app-tls';
import { appVariableRoutes } from './app-variables';
import { appRoutes } from './apps';
import { projectRoutes } from './projects';
import { projectVariableRoutes } from './project-variables';
import { serviceRoutes } from './services';
import { resourceRoutes } from './resources';
import { bucketRoutes } from './buckets';
import { registryCredentialRoutes } from './registry-credentials';
import { stackRoutes } from './stacks';
import { staticSiteRoutes } from './static-sites';
import { vpcAttachmentRoutes } from './vpc-attachments';
import { vpcPeerRouteRoutes } from './vpc-peer-routes';
import { vpcSiteConnectionRoutes } from './vpc-site-connections';
import { vpcSubnetRoutes } from './vpc-subnets';
import { vpcVpnGatewayRoutes } from './vpc-vpn-gateways';
import { vpcVpnUserRoutes } from './vpc-vpn-users';
import { vpcRoutes } from './vpcs';
import { webhookRoutes } from './webhooks';

/** The route table: every declared route of the API (one entry per line). */
export const routes: RouteDef[] = [
  ...projectRoutes,
  ...projectVariableRoutes,
  ...resourceRoutes,
  ...auditRoutes,
  ...vpcRoutes,
  ...vpcSubnetRoutes,
  ...vpcAttachmentRoutes,
  ...vpcPeerRouteRoutes,
  ...vpcVpnGatewayRoutes,
  ...vpcVpnUserRoutes,
  ...vpcSiteConnectionRoutes,
  ...webhookRoutes,
  ...bucketRoutes,
  ...registryCredentialRoutes,
  ...stackRoutes,
  ...staticSiteRoutes,
  ...domainRoutes,
  ...previewRoutes,
  ...addonRoutes,
  ...serviceRoutes,
  ...cronjobRoutes,
  ...appRoutes,
  ...appDeploymentRoutes,
  ...appLogRoutes,
  ...appPortRoutes,
  ...appVariableRoutes,
  ...appTlsRoutes,
];
