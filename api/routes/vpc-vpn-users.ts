import * as yup from 'yup';
import { VAULT_EMPTIED_SIGNAL } from '../../domain/vpc';
import { wireguardConfig } from '../../domain/wireguard';
import { one } from '../../entities/sql';
import { VpcVpnUser } from '../../entities/vpc';
import { write } from '../commands/audited-write';
import { findVpc } from '../commands/vpcs';
import { createVpnUser, deleteVpnUser } from '../commands/vpc-vpn-users';
import { gone, notFound } from '../problem';
import { route, type AnyRouteContext } from '../route';
import { createVpnUserBody } from '../schemas/vpcs';
import { VPN_USER_COLUMNS, vpnUserSchema, vpnUserView, type VpcRow, type VpnUserRow } from '../views/vpcs';
import { vpcChildren } from './vpc-children';

const TAG = 'vpcs';

async function findUser(
  ctx: AnyRouteContext,
  vpc: VpcRow,
  userUuid: string,
  db = ctx.deps.dataSource.manager,
): Promise<VpnUserRow> {
  const row = await one<VpnUserRow>(
    db,
    `SELECT ${VPN_USER_COLUMNS} FROM vpc_vpn_users WHERE uuid = $1 AND vpc_uuid = $2`,
    [userUuid, vpc.uuid],
  );
  if (!row) throw notFound('VPN user');
  return row;
}

export const vpcVpnUserRoutes = [
  route<{ uuid: string }>({
    method: 'get',
    path: '/vpcs/{uuid}/vpn_users',
    requires: 'network.read',
    tag: TAG,
    summary: "List a VPC's WireGuard devices",
    response: yup.array(vpnUserSchema),
    async handler(ctx) {
      const found = await vpcChildren<VpnUserRow>(
        ctx,
        ctx.params.uuid,
        `SELECT ${VPN_USER_COLUMNS} FROM vpc_vpn_users`,
      );
      return found.map((u) => vpnUserView(u));
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof createVpnUserBody>>({
    method: 'post',
    path: '/vpcs/{uuid}/vpn_users',
    requires: 'vpcs.vpn_users',
    tag: TAG,
    status: 201,
    audit: 'vpn_user.create',
    body: createVpnUserBody,
    response: vpnUserSchema,
    summary:
      'Add a WireGuard device (422 unless WireGuard is enabled); its configuration is readable once, within 15 minutes, at .../config',
    async handler(ctx) {
      const user = await write(ctx, (tx) =>
        createVpnUser(tx, ctx.caller, { vpcUuid: ctx.params.uuid, name: ctx.body.name }),
      );
      ctx.koa.set('Location', `/api/v1/vpcs/${user.vpc_uuid}/vpn_users/${user.uuid}`);
      return vpnUserView(user);
    },
  }),
  route<{ uuid: string; user_uuid: string }>({
    method: 'get',
    path: '/vpcs/{uuid}/vpn_users/{user_uuid}/config',
    requires: 'vpcs.vpn_users',
    tag: TAG,
    response: yup.string().strict().required(),
    summary:
      "The device's WireGuard configuration file, readable exactly once: the read empties the 15-minute vault; later reads, reads before the device is active and reads after expiry answer 410",
    async handler(ctx) {
      const vpc = await findVpc(ctx, ctx.params.uuid);
      const user = await findUser(ctx, vpc, ctx.params.user_uuid);
      if (user.status !== 'active')
        throw gone(`the device is ${user.status}, not active yet; its configuration can be read once it is active`);
      // Raw: the guarded update answers the key it empties (the row as it was), which RETURNING of the builder cannot.
      const taken = await one<{ sealed: string }>(
        ctx.deps.dataSource,
        `UPDATE vpc_vpn_users u SET private_key_sealed = NULL, config_read_at = now(), updated_at = now()
           FROM (SELECT uuid, private_key_sealed FROM vpc_vpn_users WHERE uuid = $1 FOR UPDATE) o
          WHERE u.uuid = o.uuid AND u.status = 'active' AND u.private_key_sealed IS NOT NULL AND u.vault_expires_at > now()
          RETURNING o.private_key_sealed AS sealed`,
        [user.uuid],
      );
      if (!taken) {
        // An expired key is destroyed now (if the vault's timer has not done it yet), never kept.
        await ctx.deps.dataSource.manager
          .createQueryBuilder()
          .update(VpcVpnUser)
          .set({ private_key_sealed: null, key_destroyed_at: () => 'now()' })
          .where('uuid = :uuid AND private_key_sealed IS NOT NULL AND vault_expires_at <= now()', { uuid: user.uuid })
          .execute();
        throw gone(
          user.config_read_at
            ? 'the configuration was already read; it is readable once (delete the device and add another for a new one)'
            : 'the configuration expired unread and its key was destroyed; delete the device and add another',
        );
      }
      const gateway = await one<{ public_key: string; endpoint: string }>(
        ctx.deps.dataSource,
        `SELECT g.public_key, g.endpoint FROM vpc_vpn_gateways g JOIN vpc_vpn_users u ON u.gateway_uuid = g.uuid WHERE u.uuid = $1`,
        [user.uuid],
      );
      const config = wireguardConfig({
        privateKey: ctx.deps.secretBox.open(taken.sealed),
        address: `${user.address_v4}/32`,
        dns: vpc.resolver_v4!,
        peerPublicKey: gateway!.public_key,
        endpoint: gateway!.endpoint,
        allowedIps: [vpc.cidr_v4, ...(vpc.cidr_v6 ? [vpc.cidr_v6] : [])],
      });
      // Ends the vault's timer early; if it already ended, there is nothing to tell.
      await ctx.deps.temporal.workflow
        .getHandle(`vpn-user-create/${user.uuid}`)
        .signal(VAULT_EMPTIED_SIGNAL)
        .catch((err: Error) =>
          ctx.deps.logger.debug({ err: err.message, user: user.uuid }, 'vault timer not signalled'),
        );
      ctx.koa.set('Content-Type', 'text/plain; charset=utf-8');
      ctx.koa.set('Content-Disposition', `attachment; filename="${user.name}.conf"`);
      ctx.koa.set('Cache-Control', 'no-store');
      return config;
    },
  }),
  route<{ uuid: string; user_uuid: string }>({
    method: 'delete',
    path: '/vpcs/{uuid}/vpn_users/{user_uuid}',
    requires: 'vpcs.vpn_users',
    tag: TAG,
    status: 202,
    audit: 'vpn_user.delete',
    response: vpnUserSchema,
    summary: 'Remove a WireGuard device from the gateway (and destroy any key left in its vault)',
    async handler(ctx) {
      const user = await write(ctx, (tx) =>
        deleteVpnUser(tx, ctx.caller, { vpcUuid: ctx.params.uuid, userUuid: ctx.params.user_uuid }),
      );
      return vpnUserView(user);
    },
  }),
];
