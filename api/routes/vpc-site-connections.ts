import * as yup from 'yup';
import { isNetworkAddress, parseCidr4 } from '../../domain/vpc';
import { write } from '../commands/audited-write';
import { createSiteConnection, deleteSiteConnection } from '../commands/vpc-site-connections';
import { badRequest, unprocessable } from '../problem';
import { route } from '../route';
import { createSiteConnectionBody } from '../schemas/vpcs';
import {
  SITE_CONNECTION_SELECT,
  siteConnectionSchema,
  siteConnectionView,
  type SiteConnectionRow,
} from '../views/vpcs';
import { vpcChildren } from './vpc-children';

const TAG = 'vpcs';

export const vpcSiteConnectionRoutes = [
  route<{ uuid: string }>({
    method: 'get',
    path: '/vpcs/{uuid}/site_connections',
    requires: 'network.read',
    tag: TAG,
    summary: "List a VPC's site-to-site connections (pre-shared keys are never returned)",
    response: yup.array(siteConnectionSchema),
    async handler(ctx) {
      const found = await vpcChildren<SiteConnectionRow>(ctx, ctx.params.uuid, SITE_CONNECTION_SELECT, 'c');
      return found.map(siteConnectionView);
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof createSiteConnectionBody>>({
    method: 'post',
    path: '/vpcs/{uuid}/site_connections',
    requires: 'vpcs.site_connections',
    tag: TAG,
    status: 201,
    audit: 'site_connection.create',
    body: createSiteConnectionBody,
    response: siteConnectionSchema,
    summary:
      'Connect a remote network over IPsec: takes one public IPv4 of the region (public_ip, for the far side; 422 when none is free), 199 USD per month',
    async handler(ctx) {
      const refusal = ctx.deps.capabilities?.siteConnections ?? null;
      if (refusal)
        throw unprocessable(refusal, [
          { path: 'body', message: 'the data-plane driver makes no site-to-site tunnels' },
        ]);
      const remote = parseCidr4(`${ctx.body.remote_address}/32`);
      if (!remote)
        throw badRequest('remote_address is not an IPv4 address', [
          { path: 'body.remote_address', message: 'not an IPv4 address' },
        ]);
      const remoteRanges = ctx.body.remote_cidrs.map((text, i) => {
        const c = parseCidr4(text);
        if (!c)
          throw badRequest(`${text} is not an IPv4 range`, [
            { path: `body.remote_cidrs[${i}]`, message: 'not an IPv4 range' },
          ]);
        if (!isNetworkAddress(c))
          throw unprocessable(`${text} has host bits set`, [
            { path: `body.remote_cidrs[${i}]`, message: 'host bits set' },
          ]);
        return c;
      });
      const connection = await write(ctx, (tx) =>
        createSiteConnection(tx, ctx.caller, {
          vpcUuid: ctx.params.uuid,
          name: ctx.body.name,
          gatewayUuid: ctx.body.gateway_uuid,
          remoteAddress: ctx.body.remote_address,
          remoteCidrs: ctx.body.remote_cidrs,
          remoteRanges,
          preSharedKeys: ctx.body.tunnels.map((t) => t.pre_shared_key),
        }),
      );
      ctx.koa.set('Location', `/api/v1/vpcs/${connection.vpc_uuid}/site_connections/${connection.uuid}`);
      return siteConnectionView(connection);
    },
  }),
  route<{ uuid: string; connection_uuid: string }>({
    method: 'delete',
    path: '/vpcs/{uuid}/site_connections/{connection_uuid}',
    requires: 'vpcs.site_connections',
    tag: TAG,
    status: 202,
    audit: 'site_connection.delete',
    response: siteConnectionSchema,
    summary:
      'Delete a site-to-site connection: its tunnels go down, its public IPv4 returns to the pool and its billing ends',
    async handler(ctx) {
      const connection = await write(ctx, (tx) =>
        deleteSiteConnection(tx, ctx.caller, { vpcUuid: ctx.params.uuid, connectionUuid: ctx.params.connection_uuid }),
      );
      return siteConnectionView(connection);
    },
  }),
];
