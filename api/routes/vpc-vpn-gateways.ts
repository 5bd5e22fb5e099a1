import { randomUUID } from 'node:crypto';
import * as yup from 'yup';
import { WIREGUARD_PORT, generateWireguardKeyPair } from '../../domain/wireguard';
import { one } from '../../entities/sql';
import { recordAudit, snapshot } from '../audit';
import { badRequest, conflict, notFound, unprocessable } from '../problem';
import { route } from '../route';
import { createGatewayBody } from '../schemas/vpcs';
import { GATEWAY_COLUMNS, gatewaySchema, gatewayView, type GatewayRow } from '../views/vpcs';
import { assertVpcActive, findVpc } from '../commands/vpcs';
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
      const { gateway, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        const vpc = await findVpc(ctx, ctx.params.uuid, m, true);
        assertVpcActive(vpc);
        const uuid = randomUUID();
        let publicKey: string | null = null;
        let privateSealed: string | null = null;
        let endpoint: string | null = null;
        if (kind === 'wireguard') {
          const pair = generateWireguardKeyPair();
          publicKey = pair.publicKey;
          privateSealed = ctx.deps.secretBox.seal(pair.privateKey);
          endpoint = `${uuid.slice(0, 8)}.vpn.${vpc.region_domain}:${WIREGUARD_PORT}`;
        }
        const credentials =
          needed.length > 0
            ? ctx.deps.secretBox.seal(JSON.stringify(Object.fromEntries(needed.map((f) => [f, body[f]]))))
            : null;
        const row = await one<GatewayRow>(
          m,
          `INSERT INTO vpc_vpn_gateways (uuid, vpc_uuid, kind, public_key, private_key_sealed, endpoint, credentials_sealed)
           VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT ON CONSTRAINT vpc_vpn_gateways_one_per_kind DO NOTHING RETURNING ${GATEWAY_COLUMNS}`,
          [uuid, vpc.uuid, kind, publicKey, privateSealed, endpoint, credentials],
        );
        if (!row) throw conflict(`the VPC already has a ${kind} gateway (one of each kind per VPC)`);
        await recordAudit(m, ctx, {
          resourceUuid: uuid,
          before: null,
          after: await snapshot(m, 'vpc_vpn_gateways', uuid),
        });
        const op = await ctx.deps.outbox.enqueue(m, {
          operation: 'vpn-gateway-enable',
          workflow: 'vpnGatewayEnable',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: uuid,
          args: [{ gatewayUuid: uuid }],
        });
        return { gateway: row, operation: op };
      });
      await ctx.deps.outbox.dispatch(operation);
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
    async handler(ctx) {
      const { gateway, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        const vpc = await findVpc(ctx, ctx.params.uuid, m, true);
        const found = await one<GatewayRow>(
          m,
          `SELECT ${GATEWAY_COLUMNS} FROM vpc_vpn_gateways WHERE uuid = $1 AND vpc_uuid = $2 FOR UPDATE`,
          [ctx.params.gateway_uuid, vpc.uuid],
        );
        if (!found) throw notFound('VPN gateway');
        const before = await snapshot(m, 'vpc_vpn_gateways', found.uuid);
        if (found.status === 'deleting') {
          await recordAudit(m, ctx, { resourceUuid: found.uuid, before, after: before });
          return { gateway: found, operation: null };
        }
        if (found.status === 'pending')
          throw conflict('the gateway is still being enabled; disable it once it is active');
        const [{ n }] = await m.query(`SELECT count(*)::int AS n FROM vpc_site_connections WHERE gateway_uuid = $1`, [
          found.uuid,
        ]);
        if (n > 0) throw unprocessable(`${n} site-to-site connection(s) terminate on this gateway; delete them first`);
        const updated = await one<GatewayRow>(
          m,
          `UPDATE vpc_vpn_gateways SET status = 'deleting', updated_at = now() WHERE uuid = $1 RETURNING ${GATEWAY_COLUMNS}`,
          [found.uuid],
        );
        await m.query(`UPDATE vpc_vpn_users SET status = 'deleting', updated_at = now() WHERE gateway_uuid = $1`, [
          found.uuid,
        ]);
        const op = await ctx.deps.outbox.enqueue(m, {
          operation: 'vpn-gateway-disable',
          workflow: 'vpnGatewayDisable',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: found.uuid,
          args: [{ gatewayUuid: found.uuid }],
        });
        await recordAudit(m, ctx, {
          resourceUuid: found.uuid,
          before,
          after: await snapshot(m, 'vpc_vpn_gateways', found.uuid),
        });
        return { gateway: updated!, operation: op };
      });
      if (operation) await ctx.deps.outbox.dispatch(operation);
      return gatewayView(gateway);
    },
  }),
];
