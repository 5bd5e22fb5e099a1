import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { one, rows } from '../../../entities/sql';
import type { NetworkDriver } from '../../../platform/drivers/network';
import type { SimulatedCore } from './core';

const fingerprint = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * The simulated network driver: keeps VPCs, routers, resolvers, attachments (with pod
 * addresses and DNS names), restarts, routes, gateways, WireGuard peers and IPsec tunnels
 * in sim_network_* tables. No packet moves: it is a simulation, and says so. Secrets it is
 * handed (credentials, pre-shared keys) are kept only as SHA-256 fingerprints.
 */
export function createSimulatedNetwork(core: SimulatedCore): NetworkDriver {
  const db = core.db;
  return {
    async createVpc(spec) {
      await core.maybeFail('network.createVpc');
      await db.query(
        `INSERT INTO sim_network_components (vpc_uuid, component, address) VALUES ($1, 'vpc', $2) ON CONFLICT DO NOTHING`,
        [spec.vpcUuid, `${spec.cidrV4} ${spec.cidrV6}`],
      );
    },
    async createRouter(spec) {
      await core.maybeFail('network.createRouter');
      await db.query(
        `INSERT INTO sim_network_components (vpc_uuid, component, address) VALUES ($1, 'router', $2) ON CONFLICT DO NOTHING`,
        [spec.vpcUuid, spec.routerV4],
      );
    },
    async createResolver(spec) {
      await core.maybeFail('network.createResolver');
      await db.query(
        `INSERT INTO sim_network_components (vpc_uuid, component, address) VALUES ($1, 'resolver', $2) ON CONFLICT DO NOTHING`,
        [spec.vpcUuid, spec.resolverV4],
      );
    },
    async deleteResolver(vpcUuid) {
      await core.maybeFail('network.deleteResolver');
      await db.query(`DELETE FROM sim_network_components WHERE vpc_uuid = $1 AND component = 'resolver'`, [vpcUuid]);
    },
    async deleteRouter(vpcUuid) {
      await core.maybeFail('network.deleteRouter');
      await db.query(`DELETE FROM sim_network_components WHERE vpc_uuid = $1 AND component = 'router'`, [vpcUuid]);
      await db.query(`DELETE FROM sim_network_routes WHERE vpc_uuid = $1`, [vpcUuid]);
    },
    async deleteVpc(vpcUuid) {
      await core.maybeFail('network.deleteVpc');
      await db.query(
        `DELETE FROM sim_network_peers WHERE gateway_uuid IN (SELECT gateway_uuid FROM sim_network_gateways WHERE vpc_uuid = $1)`,
        [vpcUuid],
      );
      await db.query(`DELETE FROM sim_network_gateways WHERE vpc_uuid = $1`, [vpcUuid]);
      await db.query(`DELETE FROM sim_network_routes WHERE vpc_uuid = $1`, [vpcUuid]);
      await db.query(`DELETE FROM sim_network_components WHERE vpc_uuid = $1`, [vpcUuid]);
    },
    async attach(spec) {
      await core.maybeFail('network.attach');
      const existing = await one<{ address: string }>(
        db,
        `SELECT host(address) AS address FROM sim_network_attachments WHERE attachment_uuid = $1`,
        [spec.attachmentUuid],
      );
      if (existing) return { addressV4: existing.address };
      if (!spec.subnetCidrV4) {
        // An IPv6-only subnet: the simulation hands out no IPv4 address.
        await db.query(
          `INSERT INTO sim_network_attachments (attachment_uuid, vpc_uuid, workload_type, workload_uuid, default_route, fqdn)
           VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
          [spec.attachmentUuid, spec.vpcUuid, spec.workloadType, spec.workloadUuid, spec.defaultRoute, spec.fqdn],
        );
        return { addressV4: null };
      }
      // The pod's address: the lowest free host address of the subnet (after the gateway at +1).
      for (let attempt = 0; attempt < 5; attempt++) {
        const row = await one<{ address: string }>(
          db,
          `WITH s AS (SELECT $3::cidr AS net)
           INSERT INTO sim_network_attachments (attachment_uuid, vpc_uuid, workload_type, workload_uuid, subnet_cidr, address, default_route, fqdn)
           SELECT $1, $2, $4, $5, s.net, a.addr, $6, $7 FROM s,
             LATERAL (SELECT set_masklen((s.net + g)::inet, 32) AS addr
                        FROM generate_series(2, (2 ^ (32 - masklen(s.net)))::bigint - 2) g
                       WHERE NOT EXISTS (SELECT 1 FROM sim_network_attachments x WHERE x.vpc_uuid = $2 AND x.address = set_masklen((s.net + g)::inet, 32))
                       ORDER BY g LIMIT 1) a
           ON CONFLICT DO NOTHING RETURNING host(address) AS address`,
          [
            spec.attachmentUuid,
            spec.vpcUuid,
            spec.subnetCidrV4,
            spec.workloadType,
            spec.workloadUuid,
            spec.defaultRoute,
            spec.fqdn,
          ],
        );
        if (row) return { addressV4: row.address };
        const again = await one<{ address: string }>(
          db,
          `SELECT host(address) AS address FROM sim_network_attachments WHERE attachment_uuid = $1`,
          [spec.attachmentUuid],
        );
        if (again) return { addressV4: again.address };
      }
      throw ApplicationFailure.nonRetryable(`no free address in ${spec.subnetCidrV4}`, 'SubnetFull');
    },
    async detach(attachmentUuid) {
      await core.maybeFail('network.detach');
      await db.query(`DELETE FROM sim_network_attachments WHERE attachment_uuid = $1`, [attachmentUuid]);
    },
    async restartWorkload(requestId, workload, reason) {
      await core.maybeFail('network.restartWorkload');
      await db.query(
        `INSERT INTO sim_network_restarts (request_id, workload_type, workload_uuid, reason) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
        [requestId, workload.workloadType, workload.workloadUuid, reason],
      );
    },
    async applyRoutes(vpcUuid, routes) {
      await core.maybeFail('network.applyRoutes');
      const gateways = await rows<{ kind: string }>(db, `SELECT kind FROM sim_network_gateways WHERE vpc_uuid = $1`, [
        vpcUuid,
      ]);
      const kinds = new Set(gateways.map((g) => g.kind));
      const results = routes.map((r) =>
        kinds.has(r.gatewayKind)
          ? { routeUuid: r.routeUuid, applied: true }
          : { routeUuid: r.routeUuid, applied: false, reason: `no ${r.gatewayKind} gateway is enabled on this VPC` },
      );
      const installed = routes.filter((_, i) => results[i]!.applied);
      await db.transaction(async (m) => {
        await m.query(`DELETE FROM sim_network_routes WHERE vpc_uuid = $1`, [vpcUuid]);
        for (const r of installed) {
          await m.query(`INSERT INTO sim_network_routes (vpc_uuid, cidr, gateway_kind) VALUES ($1, $2, $3)`, [
            vpcUuid,
            r.cidr,
            r.gatewayKind,
          ]);
        }
      });
      return results;
    },
    async enableGateway(spec) {
      await core.maybeFail('network.enableGateway');
      const creds = spec.credentials ? fingerprint(JSON.stringify(spec.credentials)) : null;
      await db.query(
        `INSERT INTO sim_network_gateways (gateway_uuid, vpc_uuid, kind, public_key, credential_fingerprint) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT DO NOTHING`,
        [spec.gatewayUuid, spec.vpcUuid, spec.kind, spec.publicKey, creds],
      );
    },
    async disableGateway(gatewayUuid) {
      await core.maybeFail('network.disableGateway');
      await db.query(`DELETE FROM sim_network_peers WHERE gateway_uuid = $1`, [gatewayUuid]);
      await db.query(`DELETE FROM sim_network_gateways WHERE gateway_uuid = $1`, [gatewayUuid]);
    },
    async addPeer(spec) {
      await core.maybeFail('network.addPeer');
      const gateway = await one(db, `SELECT 1 FROM sim_network_gateways WHERE gateway_uuid = $1`, [spec.gatewayUuid]);
      if (!gateway) throw ApplicationFailure.nonRetryable('the gateway is not enabled', 'GatewayMissing');
      await db.query(
        `INSERT INTO sim_network_peers (device_uuid, gateway_uuid, public_key, address) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
        [spec.deviceUuid, spec.gatewayUuid, spec.publicKey, spec.address],
      );
    },
    async removePeer(deviceUuid) {
      await core.maybeFail('network.removePeer');
      await db.query(`DELETE FROM sim_network_peers WHERE device_uuid = $1`, [deviceUuid]);
    },
    async createTunnel(spec) {
      await core.maybeFail('network.createTunnel');
      await db.query(
        `INSERT INTO sim_network_tunnels (connection_uuid, vpc_uuid, gateway_uuid, public_ip, remote_address, remote_cidrs, psk_fingerprints)
         VALUES ($1, $2, $3, $4, $5, $6::cidr[], $7) ON CONFLICT DO NOTHING`,
        [
          spec.connectionUuid,
          spec.vpcUuid,
          spec.gatewayUuid,
          spec.publicIp,
          spec.remoteAddress,
          spec.remoteCidrs,
          spec.preSharedKeys.map(fingerprint),
        ],
      );
    },
    async deleteTunnel(connectionUuid) {
      await core.maybeFail('network.deleteTunnel');
      await db.query(`DELETE FROM sim_network_tunnels WHERE connection_uuid = $1`, [connectionUuid]);
    },
  };
}
