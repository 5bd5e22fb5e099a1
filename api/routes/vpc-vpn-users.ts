import { randomUUID } from 'node:crypto';
import * as yup from 'yup';
import { VAULT_EMPTIED_SIGNAL, cidr4, vpnPoolAddresses } from '../../domain/vpc';
import { WIREGUARD_VAULT_MS, generateWireguardKeyPair, wireguardConfig } from '../../domain/wireguard';
import { one, rows } from '../../entities/sql';
import { recordAudit, snapshot } from '../audit';
import { conflict, gone, notFound, unprocessable } from '../problem';
import { route, type AnyRouteContext } from '../route';
import { createVpnUserBody } from '../schemas/vpcs';
import { VPN_USER_COLUMNS, vpnUserSchema, vpnUserView, type VpcRow, type VpnUserRow } from '../views/vpcs';
import { assertVpcActive, findVpc } from '../commands/vpcs';
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
      const { user, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        const vpc = await findVpc(ctx, ctx.params.uuid, m, true);
        assertVpcActive(vpc);
        const gateway = await one<{ uuid: string }>(
          m,
          `SELECT uuid FROM vpc_vpn_gateways WHERE vpc_uuid = $1 AND kind = 'wireguard' AND status = 'active'`,
          [vpc.uuid],
        );
        if (!gateway)
          throw unprocessable('WireGuard is not enabled on this VPC: turn on a wireguard VPN gateway first');
        if (await one(m, `SELECT 1 FROM vpc_vpn_users WHERE vpc_uuid = $1 AND name = $2`, [vpc.uuid, ctx.body.name])) {
          throw conflict(`a VPN user named "${ctx.body.name}" already exists in this VPC`);
        }
        const used = new Set(
          (
            await rows<{ a: string }>(m, `SELECT host(address_v4) AS a FROM vpc_vpn_users WHERE vpc_uuid = $1`, [
              vpc.uuid,
            ])
          ).map((r) => r.a),
        );
        const free = vpnPoolAddresses(cidr4(vpc.vpn_pool_v4!)).filter((a) => !used.has(a));
        const keys = generateWireguardKeyPair();
        const uuid = randomUUID();
        let row: VpnUserRow | undefined;
        // The unique (vpc, address) index settles races: try the next free address.
        for (const address of free.slice(0, 8)) {
          row = await one<VpnUserRow>(
            m,
            `INSERT INTO vpc_vpn_users (uuid, vpc_uuid, gateway_uuid, name, public_key, address_v4, private_key_sealed, vault_expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, now() + $8 * interval '1 millisecond')
             ON CONFLICT ON CONSTRAINT vpc_vpn_users_address DO NOTHING RETURNING ${VPN_USER_COLUMNS}`,
            [
              uuid,
              vpc.uuid,
              gateway.uuid,
              ctx.body.name,
              keys.publicKey,
              address,
              ctx.deps.secretBox.seal(keys.privateKey),
              WIREGUARD_VAULT_MS,
            ],
          );
          if (row) break;
        }
        if (!row) throw unprocessable(`the VPN pool ${vpc.vpn_pool_v4} has no free address`);
        await recordAudit(m, ctx, {
          resourceUuid: uuid,
          before: null,
          after: await snapshot(m, 'vpc_vpn_users', uuid),
        });
        const op = await ctx.deps.outbox.enqueue(m, {
          operation: 'vpn-user-create',
          workflow: 'vpnUserCreate',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: uuid,
          args: [{ userUuid: uuid, vaultMs: WIREGUARD_VAULT_MS }],
        });
        return { user: row, operation: op };
      });
      await ctx.deps.outbox.dispatch(operation);
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
        await ctx.deps.dataSource.query(
          `UPDATE vpc_vpn_users SET private_key_sealed = NULL, key_destroyed_at = now(), updated_at = now()
            WHERE uuid = $1 AND private_key_sealed IS NOT NULL AND vault_expires_at <= now()`,
          [user.uuid],
        );
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
      const { user, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        const vpc = await findVpc(ctx, ctx.params.uuid, m, true);
        const found = await findUser(ctx, vpc, ctx.params.user_uuid, m);
        const before = await snapshot(m, 'vpc_vpn_users', found.uuid);
        if (found.status === 'deleting') {
          await recordAudit(m, ctx, { resourceUuid: found.uuid, before, after: before });
          return { user: found, operation: null };
        }
        if (found.status === 'pending') throw conflict('the device is still being added; delete it once it is active');
        const updated = await one<VpnUserRow>(
          m,
          `UPDATE vpc_vpn_users SET status = 'deleting', private_key_sealed = NULL, updated_at = now() WHERE uuid = $1 RETURNING ${VPN_USER_COLUMNS}`,
          [found.uuid],
        );
        const op = await ctx.deps.outbox.enqueue(m, {
          operation: 'vpn-user-delete',
          workflow: 'vpnUserDelete',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: found.uuid,
          args: [{ userUuid: found.uuid }],
        });
        await recordAudit(m, ctx, {
          resourceUuid: found.uuid,
          before,
          after: await snapshot(m, 'vpc_vpn_users', found.uuid),
        });
        return { user: updated!, operation: op };
      });
      if (operation) await ctx.deps.outbox.dispatch(operation);
      return vpnUserView(user);
    },
  }),
];
