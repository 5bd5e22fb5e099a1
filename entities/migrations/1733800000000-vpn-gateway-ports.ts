import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A WireGuard gateway on the local driver listens on a UDP port of the machine of its own,
 * kept here so its endpoint (which client configuration files name) never changes across
 * restarts; no two gateways of one instance share one.
 */
export class VpnGatewayPorts1733800000000 implements MigrationInterface {
  name = 'VpnGatewayPorts1733800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE vpc_vpn_gateways ADD COLUMN listen_port integer`);
    await q.query(`CREATE UNIQUE INDEX vpc_vpn_gateways_listen_port ON vpc_vpn_gateways (listen_port)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX vpc_vpn_gateways_listen_port`);
    await q.query(`ALTER TABLE vpc_vpn_gateways DROP COLUMN listen_port`);
  }
}
