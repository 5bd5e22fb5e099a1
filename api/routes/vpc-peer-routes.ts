import { randomUUID } from 'node:crypto';
import * as yup from 'yup';
import { cidr4, formatCidr4, isNetworkAddress, networkOf, overlaps, parseCidr4 } from '../../domain/vpc';
import { one, rows } from '../../entities/sql';
import { recordAudit, snapshot } from '../audit';
import { badRequest, conflict, notFound, unprocessable } from '../problem';
import { route } from '../route';
import { createPeerRouteBody } from '../schemas/vpcs';
import { PEER_ROUTE_COLUMNS, peerRouteSchema, peerRouteView, type PeerRouteRow } from '../views/vpcs';
import { assertVpcActive, findVpc } from '../commands/vpcs';

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
      return ctx.deps.dataSource.transaction(async (m) => {
        const vpc = await findVpc(ctx, ctx.params.uuid, m, true);
        assertVpcActive(vpc);
        if (overlaps(range, cidr4(vpc.cidr_v4))) {
          throw unprocessable(`${ctx.body.cidr} overlaps the VPC's own range ${vpc.cidr_v4}`, [
            { path: 'body.cidr', message: 'overlaps the VPC range' },
          ]);
        }
        const row = await one<PeerRouteRow>(
          m,
          `INSERT INTO vpc_peer_routes (uuid, vpc_uuid, cidr, gateway_kind, description) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT ON CONSTRAINT vpc_peer_routes_cidr DO NOTHING RETURNING ${PEER_ROUTE_COLUMNS}`,
          [randomUUID(), vpc.uuid, ctx.body.cidr, ctx.body.gateway_kind, ctx.body.description ?? ''],
        );
        if (!row) throw conflict(`the VPC already has a route for ${ctx.body.cidr}`);
        await recordAudit(m, ctx, {
          resourceUuid: row.uuid,
          before: null,
          after: await snapshot(m, 'vpc_peer_routes', row.uuid),
        });
        ctx.koa.set('Location', `/api/v1/vpcs/${vpc.uuid}/peer_routes/${row.uuid}`);
        return peerRouteView(row);
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
      const { claimed, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        const vpc = await findVpc(ctx, ctx.params.uuid, m, true);
        assertVpcActive(vpc);
        const staged = await rows<{ uuid: string; apply_uuid: string | null }>(
          m,
          `SELECT uuid, apply_uuid FROM vpc_peer_routes WHERE vpc_uuid = $1 AND (status = 'pending' OR removed_at IS NOT NULL)`,
          [vpc.uuid],
        );
        const unclaimed = staged.filter((r) => r.apply_uuid === null);
        if (staged.length === 0) throw unprocessable('nothing is staged: create or delete a peer route first');
        if (unclaimed.length === 0) throw conflict('an apply of the staged routes is already running');
        await m.query(`UPDATE vpc_peer_routes SET apply_uuid = $2, updated_at = now() WHERE uuid = ANY($1::uuid[])`, [
          unclaimed.map((r) => r.uuid),
          applyUuid,
        ]);
        const op = await ctx.deps.outbox.enqueue(m, {
          operation: 'peer-routes-apply',
          workflow: 'peerRoutesApply',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: vpc.uuid,
          subId: applyUuid,
          args: [{ vpcUuid: vpc.uuid, applyUuid }],
        });
        const routes = await rows<PeerRouteRow>(
          m,
          `SELECT ${PEER_ROUTE_COLUMNS} FROM vpc_peer_routes WHERE apply_uuid = $1 AND removed_at IS NULL ORDER BY created_at DESC, uuid DESC`,
          [applyUuid],
        );
        // The VPC's change: which staged routes (and staged removals) this apply installs.
        const removals = await rows<{ uuid: string }>(
          m,
          `SELECT uuid FROM vpc_peer_routes WHERE apply_uuid = $1 AND removed_at IS NOT NULL ORDER BY uuid`,
          [applyUuid],
        );
        await recordAudit(m, ctx, {
          resourceUuid: vpc.uuid,
          before: null,
          after: {
            apply_uuid: applyUuid,
            routes: routes.map((r) => r.uuid).sort(),
            removals: removals.map((r) => r.uuid),
          },
        });
        return { claimed: routes, operation: op };
      });
      await ctx.deps.outbox.dispatch(operation);
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
      await ctx.deps.dataSource.transaction(async (m) => {
        const vpc = await findVpc(ctx, ctx.params.uuid, m, true);
        const found = await one<{ uuid: string; status: string; apply_uuid: string | null }>(
          m,
          `SELECT uuid, status, apply_uuid FROM vpc_peer_routes WHERE uuid = $1 AND vpc_uuid = $2 AND removed_at IS NULL`,
          [ctx.params.route_uuid, vpc.uuid],
        );
        if (!found) throw notFound('peer route');
        if (found.status === 'pending' && found.apply_uuid !== null)
          throw conflict('the route is being applied; delete it once the apply finished');
        const before = await snapshot(m, 'vpc_peer_routes', found.uuid);
        if (found.status === 'applied') {
          await m.query(
            `UPDATE vpc_peer_routes SET removed_at = now(), apply_uuid = NULL, updated_at = now() WHERE uuid = $1`,
            [found.uuid],
          );
        } else {
          await m.query(`DELETE FROM vpc_peer_routes WHERE uuid = $1`, [found.uuid]);
        }
        await recordAudit(m, ctx, {
          resourceUuid: found.uuid,
          before,
          after: await snapshot(m, 'vpc_peer_routes', found.uuid),
        });
      });
      return undefined;
    },
  }),
];
