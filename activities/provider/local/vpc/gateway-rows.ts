import type { DataSource } from 'typeorm';
import { one, rows } from '../../../../entities/sql';

/** What the gateway side of the local VPC driver reads from the database (never a key in a log). */

export interface GatewayRow {
  uuid: string;
  vpc_uuid: string;
  kind: string;
  status: string;
  private_key_sealed: string | null;
  cidr_v4: string;
}

const GATEWAY = `SELECT g.uuid, g.vpc_uuid, g.kind, g.status, g.private_key_sealed, v.cidr_v4::text AS cidr_v4
                   FROM vpc_vpn_gateways g JOIN vpcs v ON v.uuid = g.vpc_uuid`;

export const gatewayRow = (db: DataSource, gatewayUuid: string) =>
  one<GatewayRow>(db, `${GATEWAY} WHERE g.uuid = $1`, [gatewayUuid]);

/** The VPC's gateways (every status: removal must find each). */
export const gatewaysOf = (db: DataSource, vpcUuid: string) =>
  rows<GatewayRow>(db, `${GATEWAY} WHERE g.vpc_uuid = $1 ORDER BY g.created_at`, [vpcUuid]);

export interface DeviceRow {
  uuid: string;
  name: string;
  public_key: string;
  address: string;
}

/** The devices that are the gateway's peers: every one but those being deleted or failed. */
export const devicesOf = (db: DataSource, gatewayUuid: string) =>
  rows<DeviceRow>(
    db,
    `SELECT uuid, name, public_key, host(address_v4) AS address FROM vpc_vpn_users
      WHERE gateway_uuid = $1 AND status IN ('pending', 'active') ORDER BY created_at`,
    [gatewayUuid],
  );

export const deviceRow = (db: DataSource, deviceUuid: string) =>
  one<DeviceRow & { gateway_uuid: string }>(
    db,
    `SELECT uuid, name, public_key, host(address_v4) AS address, gateway_uuid FROM vpc_vpn_users WHERE uuid = $1`,
    [deviceUuid],
  );

export interface PeerRouteRow {
  uuid: string;
  cidr: string;
  gateway_kind: string;
  description: string;
}

/** Peer routes by uuid (what an apply names). */
export const peerRoutesByUuid = (db: DataSource, uuids: string[]) =>
  rows<PeerRouteRow>(
    db,
    `SELECT uuid, cidr::text AS cidr, gateway_kind, description FROM vpc_peer_routes WHERE uuid = ANY($1::uuid[])`,
    [uuids],
  );

/** The VPC's live peer routes of one kind (not removed), whatever their status. */
export const livePeerRoutes = (db: DataSource, vpcUuid: string, kind: string) =>
  rows<PeerRouteRow>(
    db,
    `SELECT uuid, cidr::text AS cidr, gateway_kind, description FROM vpc_peer_routes
      WHERE vpc_uuid = $1 AND gateway_kind = $2 AND removed_at IS NULL ORDER BY created_at`,
    [vpcUuid, kind],
  );

/** The routes the last apply left applied: what a rebuild installs again. */
export const appliedPeerRoutes = (db: DataSource, vpcUuid: string) =>
  rows<PeerRouteRow>(
    db,
    `SELECT uuid, cidr::text AS cidr, gateway_kind, description FROM vpc_peer_routes
      WHERE vpc_uuid = $1 AND removed_at IS NULL AND status = 'applied' ORDER BY created_at`,
    [vpcUuid],
  );

export async function setEndpoint(db: DataSource, gatewayUuid: string, endpoint: string): Promise<void> {
  await db.query(
    `UPDATE vpc_vpn_gateways SET endpoint = $2, updated_at = now() WHERE uuid = $1 AND endpoint IS DISTINCT FROM $2`,
    [gatewayUuid, endpoint],
  );
}
