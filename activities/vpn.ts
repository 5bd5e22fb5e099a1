import { ApplicationFailure } from '@temporalio/common';
import { one, rows } from '../entities/sql';
import type { ActivityDeps } from './deps';
import { moveState } from './state';

/**
 * Activities of VPN gateways, WireGuard devices and site-to-site connections. Sealed
 * secrets (gateway credentials, pre-shared keys) are opened here, handed to the driver and
 * never returned: workflow histories carry identifiers only.
 */
export function createVpnActivities({
  dataSource,
  provider,
  secretBox,
}: Pick<ActivityDeps, 'dataSource' | 'provider' | 'secretBox'>) {
  const network = provider.network;

  return {
    async enableVpnGateway(gatewayUuid: string): Promise<void> {
      const g = await one<{
        vpc_uuid: string;
        kind: string;
        public_key: string | null;
        credentials_sealed: string | null;
        status: string;
      }>(
        dataSource,
        `SELECT vpc_uuid, kind, public_key, credentials_sealed, status FROM vpc_vpn_gateways WHERE uuid = $1`,
        [gatewayUuid],
      );
      if (!g) throw ApplicationFailure.nonRetryable(`gateway ${gatewayUuid} does not exist`, 'NotFound');
      if (g.status !== 'pending' && g.status !== 'active') return;
      const credentials = g.credentials_sealed
        ? (JSON.parse(secretBox.open(g.credentials_sealed)) as Record<string, string>)
        : null;
      await network.enableGateway({
        gatewayUuid,
        vpcUuid: g.vpc_uuid,
        kind: g.kind,
        publicKey: g.public_key,
        credentials,
      });
    },

    async disableVpnGateway(gatewayUuid: string): Promise<void> {
      await network.disableGateway(gatewayUuid);
    },

    async deleteVpnGatewayRecord(gatewayUuid: string): Promise<boolean> {
      const deleted = await rows(
        dataSource,
        `DELETE FROM vpc_vpn_gateways WHERE uuid = $1 AND status = 'deleting' RETURNING uuid`,
        [gatewayUuid],
      );
      return deleted.length > 0;
    },

    async failVpcComponent(
      table: 'vpc_vpn_gateways' | 'vpc_vpn_users' | 'vpc_site_connections',
      uuid: string,
      reason: string,
    ): Promise<boolean> {
      if (!['vpc_vpn_gateways', 'vpc_vpn_users', 'vpc_site_connections'].includes(table))
        throw new Error(`not a VPC component table: ${table}`);
      return moveState(
        dataSource,
        { table, uuid, from: ['pending'], to: 'failed' },
        { failure_reason: reason.slice(0, 500) },
      );
    },

    /** Adds the device as a peer of the VPC's WireGuard gateway. */
    async addVpnPeer(userUuid: string): Promise<void> {
      const u = await one<{ gateway_uuid: string; public_key: string; address: string }>(
        dataSource,
        `SELECT gateway_uuid, public_key, host(address_v4) AS address FROM vpc_vpn_users WHERE uuid = $1`,
        [userUuid],
      );
      if (!u) throw ApplicationFailure.nonRetryable(`VPN user ${userUuid} does not exist`, 'NotFound');
      await network.addPeer({
        deviceUuid: userUuid,
        gatewayUuid: u.gateway_uuid,
        publicKey: u.public_key,
        address: u.address,
      });
    },

    async removeVpnPeer(userUuid: string): Promise<void> {
      await network.removePeer(userUuid);
    },

    /**
     * Destroys the device's private key if the vault was not read in time: the sealed
     * value is deleted from the database, not hidden. Answers whether a key was destroyed.
     */
    async destroyVpnVault(userUuid: string): Promise<boolean> {
      const destroyed = await rows(
        dataSource,
        `UPDATE vpc_vpn_users SET private_key_sealed = NULL, key_destroyed_at = now(), updated_at = now()
          WHERE uuid = $1 AND private_key_sealed IS NOT NULL RETURNING uuid`,
        [userUuid],
      );
      return destroyed.length > 0;
    },

    async deleteVpnUserRecord(userUuid: string): Promise<boolean> {
      const deleted = await rows(
        dataSource,
        `DELETE FROM vpc_vpn_users WHERE uuid = $1 AND status = 'deleting' RETURNING uuid`,
        [userUuid],
      );
      return deleted.length > 0;
    },

    /** Brings up the IPsec tunnels of a site connection (pre-shared keys opened here). */
    async createSiteTunnel(connectionUuid: string): Promise<void> {
      const c = await one<{
        vpc_uuid: string;
        gateway_uuid: string;
        public_ip: string;
        remote_address: string;
        remote_cidrs: string[];
        tunnels_sealed: string;
      }>(
        dataSource,
        `SELECT vpc_uuid, gateway_uuid, host(public_ip) AS public_ip, host(remote_address) AS remote_address,
                remote_cidrs::text[] AS remote_cidrs, tunnels_sealed FROM vpc_site_connections WHERE uuid = $1`,
        [connectionUuid],
      );
      if (!c) throw ApplicationFailure.nonRetryable(`site connection ${connectionUuid} does not exist`, 'NotFound');
      const tunnels = JSON.parse(secretBox.open(c.tunnels_sealed)) as Array<{ pre_shared_key: string }>;
      await network.createTunnel({
        connectionUuid,
        vpcUuid: c.vpc_uuid,
        gatewayUuid: c.gateway_uuid,
        publicIp: c.public_ip,
        remoteAddress: c.remote_address,
        remoteCidrs: c.remote_cidrs,
        preSharedKeys: tunnels.map((t) => t.pre_shared_key),
      });
    },

    async deleteSiteTunnel(connectionUuid: string): Promise<void> {
      await network.deleteTunnel(connectionUuid);
    },

    /** Ends the connection's billing and releases its public IPv4 (by deleting the holder row). */
    async releaseSiteConnection(connectionUuid: string): Promise<boolean> {
      return dataSource.transaction(async (m) => {
        const deleted = await rows(
          m,
          `DELETE FROM vpc_site_connections WHERE uuid = $1 AND status = 'deleting' RETURNING uuid`,
          [connectionUuid],
        );
        await m.query(
          `UPDATE billable_items SET ended_at = now() WHERE resource_type = 'site_connection' AND resource_uuid = $1 AND ended_at IS NULL`,
          [connectionUuid],
        );
        return deleted.length > 0;
      });
    },
  };
}
