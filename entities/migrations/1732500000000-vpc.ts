import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * VPC networking: VPCs, subnets, attachments, peer routes, VPN gateways and users,
 * site-to-site connections, each region's public IPv4 pool and billable items; plus the
 * simulated network driver's own tables (sim_network_*). The invariants races could
 * break live here: names per (workspace, region), one default VPC per region, one gateway
 * kind per VPC, non-overlapping subnets (exclusion constraints), one VPN address and one
 * public IPv4 per holder (unique indexes; allocation retries on conflict).
 */
export class Vpc1732500000000 implements MigrationInterface {
  name = 'Vpc1732500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS btree_gist`);
    await q.query(`
      CREATE TABLE vpcs (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        region_id integer NOT NULL REFERENCES regions(id),
        name text NOT NULL,
        label text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'active', 'failed', 'deleting')),
        is_default boolean NOT NULL DEFAULT false,
        cidr_v4 cidr NOT NULL CHECK (family(cidr_v4) = 4),
        cidr_v6 cidr CHECK (family(cidr_v6) = 6),
        resolver_v4 inet,
        vpn_pool_v4 cidr,
        failure_reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT vpcs_name_per_region UNIQUE (workspace_uuid, region_id, name)
      )`);
    await q.query(
      `CREATE UNIQUE INDEX vpcs_one_default_per_region ON vpcs (workspace_uuid, region_id) WHERE is_default`,
    );
    await q.query(`CREATE INDEX vpcs_workspace_created ON vpcs (workspace_uuid, created_at DESC)`);
    await q.query(`
      CREATE TABLE vpc_subnets (
        uuid uuid PRIMARY KEY,
        vpc_uuid uuid NOT NULL REFERENCES vpcs(uuid) ON DELETE CASCADE,
        name text NOT NULL,
        family text NOT NULL CHECK (family IN ('dual', 'ipv4', 'ipv6')),
        cidr_v4 cidr CHECK (family(cidr_v4) = 4),
        cidr_v6 cidr CHECK (family(cidr_v6) = 6),
        public boolean NOT NULL DEFAULT true,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT vpc_subnets_name UNIQUE (vpc_uuid, name),
        CHECK ((family = 'ipv6') = (cidr_v4 IS NULL)),
        CHECK (family <> 'ipv4' OR cidr_v6 IS NULL),
        CONSTRAINT vpc_subnets_no_overlap_v4 EXCLUDE USING gist (vpc_uuid WITH =, cidr_v4 inet_ops WITH &&),
        CONSTRAINT vpc_subnets_no_overlap_v6 EXCLUDE USING gist (vpc_uuid WITH =, cidr_v6 inet_ops WITH &&)
      )`);
    await q.query(`
      CREATE TABLE vpc_attachments (
        uuid uuid PRIMARY KEY,
        vpc_uuid uuid NOT NULL REFERENCES vpcs(uuid) ON DELETE CASCADE,
        subnet_uuid uuid NOT NULL REFERENCES vpc_subnets(uuid),
        attachable_type text NOT NULL CHECK (attachable_type IN ('App', 'Service', 'Addon')),
        attachable_uuid uuid NOT NULL,
        attachable_name text NOT NULL,
        cron_job boolean NOT NULL DEFAULT false,
        status text NOT NULL CHECK (status IN ('attaching', 'attached', 'detaching', 'failed')),
        fqdn text,
        address_v4 inet,
        failure_reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT vpc_attachments_once UNIQUE (vpc_uuid, attachable_type, attachable_uuid)
      )`);
    await q.query(`CREATE INDEX vpc_attachments_subnet ON vpc_attachments (subnet_uuid)`);
    await q.query(`CREATE INDEX vpc_attachments_workload ON vpc_attachments (attachable_type, attachable_uuid)`);
    await q.query(`
      CREATE TABLE vpc_peer_routes (
        uuid uuid PRIMARY KEY,
        vpc_uuid uuid NOT NULL REFERENCES vpcs(uuid) ON DELETE CASCADE,
        cidr cidr NOT NULL CHECK (family(cidr) = 4),
        gateway_kind text NOT NULL,
        description text NOT NULL DEFAULT '',
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'applied', 'failed')),
        -- the apply that claimed this staged change (creation, or removal when removed_at is set)
        apply_uuid uuid,
        removed_at timestamptz,
        failure_reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT vpc_peer_routes_cidr UNIQUE (vpc_uuid, cidr)
      )`);
    await q.query(`
      CREATE TABLE vpc_vpn_gateways (
        uuid uuid PRIMARY KEY,
        vpc_uuid uuid NOT NULL REFERENCES vpcs(uuid) ON DELETE CASCADE,
        kind text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'active', 'failed', 'deleting')),
        public_key text,
        private_key_sealed text,
        endpoint text,
        credentials_sealed text,
        failure_reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT vpc_vpn_gateways_one_per_kind UNIQUE (vpc_uuid, kind)
      )`);
    await q.query(`
      CREATE TABLE vpc_vpn_users (
        uuid uuid PRIMARY KEY,
        vpc_uuid uuid NOT NULL REFERENCES vpcs(uuid) ON DELETE CASCADE,
        gateway_uuid uuid NOT NULL REFERENCES vpc_vpn_gateways(uuid) ON DELETE CASCADE,
        name text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'active', 'failed', 'deleting')),
        public_key text NOT NULL,
        address_v4 inet NOT NULL,
        -- the vault: the device's private key, sealed, until the one read or the expiry
        private_key_sealed text,
        vault_expires_at timestamptz NOT NULL,
        config_read_at timestamptz,
        key_destroyed_at timestamptz,
        failure_reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT vpc_vpn_users_name UNIQUE (vpc_uuid, name),
        CONSTRAINT vpc_vpn_users_address UNIQUE (vpc_uuid, address_v4)
      )`);
    await q.query(`
      CREATE TABLE region_public_ipv4s (
        region_id integer NOT NULL REFERENCES regions(id) ON DELETE CASCADE,
        address inet NOT NULL CHECK (family(address) = 4 AND masklen(address) = 32),
        PRIMARY KEY (region_id, address)
      )`);
    await q.query(`
      CREATE TABLE vpc_site_connections (
        uuid uuid PRIMARY KEY,
        vpc_uuid uuid NOT NULL REFERENCES vpcs(uuid) ON DELETE CASCADE,
        gateway_uuid uuid NOT NULL REFERENCES vpc_vpn_gateways(uuid),
        region_id integer NOT NULL,
        name text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'active', 'failed', 'deleting')),
        public_ip inet NOT NULL,
        remote_address inet NOT NULL,
        remote_cidrs cidr[] NOT NULL,
        tunnel_count integer NOT NULL,
        tunnels_sealed text NOT NULL,
        failure_reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT vpc_site_connections_name UNIQUE (vpc_uuid, name),
        CONSTRAINT vpc_site_connections_public_ip UNIQUE (region_id, public_ip),
        FOREIGN KEY (region_id, public_ip) REFERENCES region_public_ipv4s (region_id, address)
      )`);
    await q.query(`
      CREATE TABLE billable_items (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        resource_type text NOT NULL,
        resource_uuid uuid NOT NULL,
        description text NOT NULL,
        amount numeric(12, 2) NOT NULL,
        currency text NOT NULL DEFAULT 'USD',
        period text NOT NULL DEFAULT 'month',
        started_at timestamptz NOT NULL DEFAULT now(),
        ended_at timestamptz,
        CONSTRAINT billable_items_resource UNIQUE (resource_type, resource_uuid)
      )`);
    await q.query(`CREATE INDEX billable_items_workspace ON billable_items (workspace_uuid, started_at DESC)`);

    // The simulated network driver's state (activities/provider/simulated/network.ts).
    await q.query(`
      CREATE TABLE sim_network_components (
        vpc_uuid uuid NOT NULL,
        component text NOT NULL CHECK (component IN ('vpc', 'router', 'resolver')),
        address text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (vpc_uuid, component)
      )`);
    await q.query(`
      CREATE TABLE sim_network_attachments (
        attachment_uuid uuid PRIMARY KEY,
        vpc_uuid uuid NOT NULL,
        workload_type text NOT NULL,
        workload_uuid uuid NOT NULL,
        subnet_cidr cidr,
        address inet,
        default_route text NOT NULL CHECK (default_route IN ('platform', 'vpc')),
        fqdn text,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (vpc_uuid, address)
      )`);
    await q.query(`
      CREATE TABLE sim_network_restarts (
        request_id text PRIMARY KEY,
        workload_type text NOT NULL,
        workload_uuid uuid NOT NULL,
        reason text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE sim_network_routes (
        vpc_uuid uuid NOT NULL,
        cidr cidr NOT NULL,
        gateway_kind text NOT NULL,
        installed_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (vpc_uuid, cidr)
      )`);
    await q.query(`
      CREATE TABLE sim_network_gateways (
        gateway_uuid uuid PRIMARY KEY,
        vpc_uuid uuid NOT NULL,
        kind text NOT NULL,
        public_key text,
        credential_fingerprint text,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE sim_network_peers (
        device_uuid uuid PRIMARY KEY,
        gateway_uuid uuid NOT NULL,
        public_key text NOT NULL,
        address inet NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE sim_network_tunnels (
        connection_uuid uuid PRIMARY KEY,
        vpc_uuid uuid NOT NULL,
        gateway_uuid uuid NOT NULL,
        public_ip inet NOT NULL,
        remote_address inet NOT NULL,
        remote_cidrs cidr[] NOT NULL,
        psk_fingerprints text[] NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of [
      'sim_network_tunnels',
      'sim_network_peers',
      'sim_network_gateways',
      'sim_network_routes',
      'sim_network_restarts',
      'sim_network_attachments',
      'sim_network_components',
      'billable_items',
      'vpc_site_connections',
      'region_public_ipv4s',
      'vpc_vpn_users',
      'vpc_vpn_gateways',
      'vpc_peer_routes',
      'vpc_attachments',
      'vpc_subnets',
      'vpcs',
    ]) {
      await q.query(`DROP TABLE IF EXISTS ${t}`);
    }
  }
}
