import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { addressArray } from './columns';

/** A VPC (contract: VPC): one region of one workspace. Addresses are PostgreSQL cidr/inet. */
@Entity('vpcs')
export class Vpc {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('integer') region_id: number;
  @Column('text') name: string;
  @Column('text') label: string;
  @Column('text', { default: 'pending' }) status: 'pending' | 'active' | 'failed' | 'deleting';
  @Column('boolean', { default: false }) is_default: boolean;
  @Column('cidr') cidr_v4: string;
  @Column('cidr', { nullable: true }) cidr_v6: string | null;
  @Column('inet', { nullable: true }) resolver_v4: string | null;
  @Column('cidr', { nullable: true }) vpn_pool_v4: string | null;
  @Column('text', { nullable: true }) failure_reason: string | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

@Entity('vpc_subnets')
export class VpcSubnet {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') vpc_uuid: string;
  @Column('text') name: string;
  @Column('text') family: 'dual' | 'ipv4' | 'ipv6';
  @Column('cidr', { nullable: true }) cidr_v4: string | null;
  @Column('cidr', { nullable: true }) cidr_v6: string | null;
  @Column('boolean', { default: true }) public: boolean;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** A workload (App, Service or Addon) attached to a subnet of a VPC. */
@Entity('vpc_attachments')
export class VpcAttachment {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') vpc_uuid: string;
  @Column('uuid') subnet_uuid: string;
  @Column('text') attachable_type: 'App' | 'Service' | 'Addon';
  @Column('uuid') attachable_uuid: string;
  @Column('text') attachable_name: string;
  @Column('boolean', { default: false }) cron_job: boolean;
  @Column('text') status: 'attaching' | 'attached' | 'detaching' | 'failed';
  @Column('text', { nullable: true }) fqdn: string | null;
  @Column('inet', { nullable: true }) address_v4: string | null;
  @Column('text', { nullable: true }) failure_reason: string | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

@Entity('vpc_peer_routes')
export class VpcPeerRoute {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') vpc_uuid: string;
  @Column('cidr') cidr: string;
  @Column('text') gateway_kind: string;
  @Column('text', { default: '' }) description: string;
  @Column('text', { default: 'pending' }) status: 'pending' | 'applied' | 'failed';
  @Column('uuid', { nullable: true }) apply_uuid: string | null;
  @Column('timestamptz', { nullable: true }) removed_at: Date | null;
  @Column('text', { nullable: true }) failure_reason: string | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** A VPN gateway; its credentials and WireGuard private key are sealed, never returned. */
@Entity('vpc_vpn_gateways')
export class VpcVpnGateway {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') vpc_uuid: string;
  @Column('text') kind: string;
  @Column('text', { default: 'pending' }) status: 'pending' | 'active' | 'failed' | 'deleting';
  @Column('text', { nullable: true }) public_key: string | null;
  @Column('text', { nullable: true }) private_key_sealed: string | null;
  @Column('text', { nullable: true }) endpoint: string | null;
  @Column('text', { nullable: true }) credentials_sealed: string | null;
  /** The machine's UDP port a local-driver WireGuard gateway listens on (null until enabled there). */
  @Column('integer', { nullable: true }) listen_port: number | null;
  @Column('text', { nullable: true }) failure_reason: string | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** A WireGuard device; its private key waits in the vault (sealed) for one read. */
@Entity('vpc_vpn_users')
export class VpcVpnUser {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') vpc_uuid: string;
  @Column('uuid') gateway_uuid: string;
  @Column('text') name: string;
  @Column('text', { default: 'pending' }) status: 'pending' | 'active' | 'failed' | 'deleting';
  @Column('text') public_key: string;
  @Column('inet') address_v4: string;
  @Column('text', { nullable: true }) private_key_sealed: string | null;
  @Column('timestamptz') vault_expires_at: Date;
  @Column('timestamptz', { nullable: true }) config_read_at: Date | null;
  @Column('timestamptz', { nullable: true }) key_destroyed_at: Date | null;
  @Column('text', { nullable: true }) failure_reason: string | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** A public IPv4 address of a region's pool (site-to-site connections take one each). */
@Entity('region_public_ipv4s')
export class RegionPublicIpv4 {
  @PrimaryColumn('integer') region_id: number;
  @PrimaryColumn('inet') address: string;
}

/** An IPsec site-to-site connection; pre-shared keys sealed in tunnels_sealed. */
@Entity('vpc_site_connections')
export class VpcSiteConnection {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') vpc_uuid: string;
  @Column('uuid') gateway_uuid: string;
  @Column('integer') region_id: number;
  @Column('text') name: string;
  @Column('text', { default: 'pending' }) status: 'pending' | 'active' | 'failed' | 'deleting';
  @Column('inet') public_ip: string;
  @Column('inet') remote_address: string;
  @Column('cidr', { array: true, transformer: addressArray }) remote_cidrs: string[];
  @Column('integer') tunnel_count: number;
  @Column('text') tunnels_sealed: string;
  @Column('text', { nullable: true }) failure_reason: string | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** What the workspace is billed for (site-to-site connections: 199 USD per month each). */
@Entity('billable_items')
export class BillableItem {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('text') resource_type: string;
  @Column('uuid') resource_uuid: string;
  @Column('text') description: string;
  @Column('numeric', { precision: 12, scale: 2 }) amount: string;
  @Column('text', { default: 'USD' }) currency: string;
  @Column('text', { default: 'month' }) period: string;
  @Column('timestamptz') started_at: Date;
  @Column('timestamptz', { nullable: true }) ended_at: Date | null;
}
