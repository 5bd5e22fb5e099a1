import { randomUUID } from 'node:crypto';
import * as yup from 'yup';
import { formatCidr4, isNetworkAddress, networkOf, parseCidr4 } from '../../domain/vpc';
import { rows } from '../../entities/sql';
import { write } from '../commands/audited-write';
import { findVpc } from '../commands/vpcs';
import { applyPeerRoutes, createPeerRoute, deletePeerRoute } from '../commands/vpc-peer-routes';
import { badRequest, unprocessable } from '../problem';
import { route } from '../route';
import { createPeerRouteBody } from '../schemas/vpcs';
import { PEER_ROUTE_COLUMNS, peerRouteSchema, peerRouteView, type PeerRouteRow } from '../views/vpcs';

const TAG = 'vpcs';

export const vpcPeerRouteRoutes = [
  route<{ uuid: string }>({
    method: 'get',
    path: '/vpcs/{uuid}/peer_routes',
    requires: 'network.read',
    tag: TAG,
    summary: "List a VPC's peer routes, newest first (a pending route is not yet in the cluster)",
    response: yup.array(peerRouteSchema),
    async handler(ctx) {
      const vpc = await findVpc(ctx, ctx.params.uuid);
      const found = await rows<PeerRouteRow>(
        ctx.deps.dataSource,
        `SELECT ${PEER_ROUTE_COLUMNS} FROM vpc_peer_routes WHERE vpc_uuid = $1 AND removed_at IS NULL ORDER BY created_at DESC, uuid DESC`,
        [vpc.uuid],
      );
      return found.map(peerRouteView);
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof createPeerRouteBody>>({
    method: 'post',
    path: '/vpcs/{uuid}/peer_routes',
    requires: 'vpcs.peer_routes',
    tag: TAG,
    status: 201,
    audit: 'vpc_peer_route.create',
    body: createPeerRouteBody,
    response: peerRouteSchema,
    summary:
      'Stage a peer route (status pending): a remote IPv4 range reachable through a gateway kind; POST .../apply installs it',
    async handler(ctx) {
      const range = parseCidr4(ctx.body.cidr);
      if (!range)
        throw badRequest(`${ctx.body.cidr} is not an IPv4 range such as 192.168.10.0/24`, [
          { path: 'body.cidr', message: 'not an IPv4 range' },
        ]);
      if (!isNetworkAddress(range)) {
        throw unprocessable(`${ctx.body.cidr} has host bits set; the range is ${formatCidr4(networkOf(range))}`, [
          { path: 'body.cidr', message: 'host bits set' },
        ]);
      }
      return write(ctx, async (tx) => {
        const created = await createPeerRoute(tx, ctx.caller, { ...ctx.body, range, vpcUuid: ctx.params.uuid });
        ctx.koa.set('Location', `/api/v1/vpcs/${created.vpc_uuid}/peer_routes/${created.uuid}`);
        return peerRouteView(created);
      });
    },
  }),
  route<{ uuid: string }>({
    method: 'post',
    path: '/vpcs/{uuid}/peer_routes/apply',
    requires: 'vpcs.peer_routes',
    tag: TAG,
    status: 202,
    audit: 'vpc.apply_peer_routes',
    response: yup.array(peerRouteSchema),
    summary:
      'Apply every staged peer route (and staged removal); every attached workload restarts once; 422 when nothing is staged',
    async handler(ctx) {
      const applyUuid = randomUUID();
      const claimed = await write(ctx, (tx) =>
        applyPeerRoutes(tx, ctx.caller, { vpcUuid: ctx.params.uuid, applyUuid }),
      );
      ctx.koa.set('X-Apply-Id', applyUuid);
      return claimed.map(peerRouteView);
    },
  }),
  route<{ uuid: string; route_uuid: string }>({
    method: 'delete',
    path: '/vpcs/{uuid}/peer_routes/{route_uuid}',
    requires: 'vpcs.peer_routes',
    tag: TAG,
    status: 204,
    audit: 'vpc_peer_route.delete',
    summary:
      'Delete a peer route: a route not yet in the cluster goes at once; an applied one is removed from the cluster by the next apply',
    async handler(ctx) {
      await write(ctx, (tx) =>
        deletePeerRoute(tx, ctx.caller, { vpcUuid: ctx.params.uuid, routeUuid: ctx.params.route_uuid }),
      );
      return undefined;
    },
  }),
];
