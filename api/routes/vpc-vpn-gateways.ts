import * as yup from 'yup';
import { write } from '../commands/audited-write';
import { createVpnGateway, deleteVpnGateway } from '../commands/vpc-vpn-gateways';
import { badRequest } from '../problem';
import { route } from '../route';
import { createGatewayBody } from '../schemas/vpcs';
import { GATEWAY_COLUMNS, gatewaySchema, gatewayView, type GatewayRow } from '../views/vpcs';
import { vpcChildren } from './vpc-children';

const TAG = 'vpcs';

/** Credentials each kind needs; other credential fields are refused for it. */
const CREDENTIALS = {
  wireguard: [],
  zero_trust: ['organization', 'client_id', 'client_secret'],
  mesh: ['auth_key'],
} as const;
const ALL_CREDENTIALS = ['organization', 'client_id', 'client_secret', 'auth_key'] as const;

export const vpcVpnGatewayRoutes = [
  route<{ uuid: string }>({
    method: 'get',
    path: '/vpcs/{uuid}/vpn_gateways',
    requires: 'network.read',
    tag: TAG,
    summary: "List a VPC's VPN gateways (credentials are never returned)",
    response: yup.array(gatewaySchema),
    async handler(ctx) {
      const found = await vpcChildren<GatewayRow>(
        ctx,
        ctx.params.uuid,
        `SELECT ${GATEWAY_COLUMNS} FROM vpc_vpn_gateways`,
      );
      return found.map(gatewayView);
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof createGatewayBody>>({
    method: 'post',
    path: '/vpcs/{uuid}/vpn_gateways',
    requires: 'vpcs.vpn_gateways',
    tag: TAG,
    status: 201,
    audit: 'vpn_gateway.create',
    body: createGatewayBody,
    response: gatewaySchema,
    summary:
      'Turn a VPN gateway on: wireguard, zero_trust (organization, client_id, client_secret) or mesh (auth_key); one of each per VPC',
    async handler(ctx) {
      const kind = ctx.body.kind;
      const needed: readonly string[] = CREDENTIALS[kind];
      const body = ctx.body as Record<string, string | undefined>;
      const missing = needed.filter((f) => body[f] === undefined);
      const extra = ALL_CREDENTIALS.filter((f) => !needed.includes(f) && body[f] !== undefined);
      if (missing.length > 0 || extra.length > 0) {
        throw badRequest(
          `a ${kind} gateway ${missing.length ? `needs ${missing.join(', ')}` : `takes no ${extra.join(', ')}`}`,
          [
            ...missing.map((f) => ({ path: `body.${f}`, message: `required for kind ${kind}` })),
            ...extra.map((f) => ({ path: `body.${f}`, message: `not used by kind ${kind}` })),
          ],
        );
      }
      const credentials = needed.length > 0 ? Object.fromEntries(needed.map((f) => [f, body[f]])) : null;
      const gateway = await write(ctx, (tx) =>
        createVpnGateway(tx, ctx.caller, { vpcUuid: ctx.params.uuid, kind, credentials }),
      );
      ctx.koa.set('Location', `/api/v1/vpcs/${gateway.vpc_uuid}/vpn_gateways/${gateway.uuid}`);
      return gatewayView(gateway);
    },
  }),
  route<{ uuid: string; gateway_uuid: string }>({
    method: 'delete',
    path: '/vpcs/{uuid}/vpn_gateways/{gateway_uuid}',
    requires: 'vpcs.vpn_gateways',
    tag: TAG,
    status: 202,
    audit: 'vpn_gateway.delete',
    response: gatewaySchema,
    summary:
      'Turn a VPN gateway off (its WireGuard devices go with it); 422 while site-to-site connections terminate on it',
    handler: async (ctx) =>
      gatewayView(
        await write(ctx, (tx) =>
          deleteVpnGateway(tx, ctx.caller, { vpcUuid: ctx.params.uuid, gatewayUuid: ctx.params.gateway_uuid }),
        ),
      ),
  }),
];
