import * as yup from 'yup';
import { GATEWAY_KINDS, ATTACHABLE_TYPES, VPC_STATUSES } from '../../domain/vpc';
import { arr, bool, num, obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { columnsOf } from '../../entities/columns';
import {
  Vpc,
  VpcAttachment,
  VpcPeerRoute,
  VpcSiteConnection,
  VpcSubnet,
  VpcVpnGateway,
  VpcVpnUser,
} from '../../entities/vpc';
import { iso, isoRequired } from './common';

/** Views of the VPC area: allow-lists, so sealed keys and credentials never leave. */

export const vpcSchema = obj({
  uuid: uuid().required(),
  name: str().required(),
  label: str().required(),
  status: oneOf(VPC_STATUSES).required(),
  region_id: yup.number().strict().integer().required(),
  region_code: str().required(),
  is_default: bool().required(),
  cidr_v4: str().required(),
  cidr_v6: str().nullable().defined(),
  resolver_v4: str().nullable().defined(),
  vpn_pool_v4: str().nullable().defined(),
  subnet_count: yup.number().strict().integer().required(),
  attachment_count: yup.number().strict().integer().required(),
  failure_reason: str().nullable().defined(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
});

/** A VPC with its region and its counts (VPC_SELECT). */
export type VpcRow = Vpc & {
  region_code: string;
  region_domain: string;
  subnet_count: number;
  attachment_count: number;
};

/**
 * SELECT list and FROM clause that produce a VpcRow (alias v). Raw: the query builder maps
 * neither an inet column to its host address nor the joined and counted fields onto the entity.
 */
export const VPC_SELECT = `
  SELECT ${columnsOf(Vpc, 'v')}, g.code AS region_code, g.domain AS region_domain,
         (SELECT count(*)::int FROM vpc_subnets s WHERE s.vpc_uuid = v.uuid) AS subnet_count,
         (SELECT count(*)::int FROM vpc_attachments a WHERE a.vpc_uuid = v.uuid AND a.status = 'attached') AS attachment_count
    FROM vpcs v JOIN regions g ON g.id = v.region_id`;

export function vpcView(v: VpcRow) {
  return {
    uuid: v.uuid,
    name: v.name,
    label: v.label,
    status: v.status,
    region_id: v.region_id,
    region_code: v.region_code,
    is_default: v.is_default,
    cidr_v4: v.cidr_v4,
    cidr_v6: v.cidr_v6,
    resolver_v4: v.resolver_v4,
    vpn_pool_v4: v.vpn_pool_v4,
    subnet_count: v.subnet_count,
    attachment_count: v.attachment_count,
    failure_reason: v.failure_reason,
    created_at: isoRequired(v.created_at),
    updated_at: isoRequired(v.updated_at),
  };
}

export const subnetSchema = obj({
  uuid: uuid().required(),
  vpc_uuid: uuid().required(),
  name: str().required(),
  family: oneOf(['dual', 'ipv4', 'ipv6'] as const).required(),
  cidr_v4: str().nullable().defined(),
  cidr_v6: str().nullable().defined(),
  public: bool().required(),
  default_route: oneOf(['platform', 'vpc'] as const).required(),
  attachment_count: yup.number().strict().integer().required(),
  created_at: timestamp().required(),
});

/** A subnet with its attachment count (SUBNET_SELECT). */
export type SubnetRow = VpcSubnet & { attachment_count: number };

export const SUBNET_SELECT = `
  SELECT ${columnsOf(VpcSubnet, 's')},
         (SELECT count(*)::int FROM vpc_attachments a WHERE a.subnet_uuid = s.uuid) AS attachment_count
    FROM vpc_subnets s`;

export function subnetView(s: SubnetRow) {
  return {
    uuid: s.uuid,
    vpc_uuid: s.vpc_uuid,
    name: s.name,
    family: s.family,
    cidr_v4: s.cidr_v4,
    cidr_v6: s.cidr_v6,
    public: s.public,
    default_route: s.public ? ('platform' as const) : ('vpc' as const),
    attachment_count: s.attachment_count,
    created_at: isoRequired(s.created_at),
  };
}

export const attachmentSchema = obj({
  uuid: uuid().required(),
  vpc_uuid: uuid().required(),
  subnet_uuid: uuid().required(),
  attachable_type: oneOf(ATTACHABLE_TYPES).required(),
  attachable_uuid: uuid().required(),
  attachable_name: str().required(),
  status: oneOf(['attaching', 'attached', 'detaching', 'failed'] as const).required(),
  fqdn: str().nullable().defined(),
  address_v4: str().nullable().defined(),
  failure_reason: str().nullable().defined(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
});

export type AttachmentRow = VpcAttachment;

export const ATTACHMENT_COLUMNS = columnsOf(VpcAttachment);

export function attachmentView(a: AttachmentRow) {
  return {
    uuid: a.uuid,
    vpc_uuid: a.vpc_uuid,
    subnet_uuid: a.subnet_uuid,
    attachable_type: a.attachable_type,
    attachable_uuid: a.attachable_uuid,
    attachable_name: a.attachable_name,
    status: a.status,
    fqdn: a.fqdn,
    address_v4: a.address_v4,
    failure_reason: a.failure_reason,
    created_at: isoRequired(a.created_at),
    updated_at: isoRequired(a.updated_at),
  };
}

export const peerRouteSchema = obj({
  uuid: uuid().required(),
  cidr: str().required(),
  gateway_kind: oneOf(GATEWAY_KINDS).required(),
  description: str().defined(),
  status: oneOf(['pending', 'applied', 'failed'] as const).required(),
  failure_reason: str().nullable().defined(),
  created_at: timestamp().required(),
});

export type PeerRouteRow = VpcPeerRoute;

export const PEER_ROUTE_COLUMNS = columnsOf(VpcPeerRoute);

export function peerRouteView(r: PeerRouteRow) {
  return {
    uuid: r.uuid,
    cidr: r.cidr,
    gateway_kind: r.gateway_kind,
    description: r.description,
    status: r.status,
    failure_reason: r.failure_reason,
    created_at: isoRequired(r.created_at),
  };
}

export const gatewaySchema = obj({
  uuid: uuid().required(),
  vpc_uuid: uuid().required(),
  kind: oneOf(GATEWAY_KINDS).required(),
  status: oneOf(VPC_STATUSES).required(),
  public_key: str().nullable().defined(),
  endpoint: str().nullable().defined(),
  failure_reason: str().nullable().defined(),
  created_at: timestamp().required(),
});

/** Never the sealed private key or credentials. */
export type GatewayRow = Omit<VpcVpnGateway, 'private_key_sealed' | 'credentials_sealed'>;

export const GATEWAY_COLUMNS = columnsOf(VpcVpnGateway, undefined, {
  except: ['private_key_sealed', 'credentials_sealed'],
});

export function gatewayView(g: GatewayRow) {
  return {
    uuid: g.uuid,
    vpc_uuid: g.vpc_uuid,
    kind: g.kind,
    status: g.status,
    public_key: g.public_key,
    endpoint: g.endpoint,
    failure_reason: g.failure_reason,
    created_at: isoRequired(g.created_at),
  };
}

export const vpnUserSchema = obj({
  uuid: uuid().required(),
  vpc_uuid: uuid().required(),
  name: str().required(),
  status: oneOf(VPC_STATUSES).required(),
  public_key: str().required(),
  address_v4: str().required(),
  config_status: oneOf(['unread', 'read', 'expired'] as const).required(),
  vault_expires_at: timestamp().required(),
  config_read_at: timestamp().nullable().defined(),
  failure_reason: str().nullable().defined(),
  created_at: timestamp().required(),
});

/** `has_key` only says whether the vault still holds a key; the key itself is never selected. */
export type VpnUserRow = Omit<VpcVpnUser, 'private_key_sealed'> & { has_key: boolean };

export const VPN_USER_COLUMNS = `${columnsOf(VpcVpnUser, undefined, { except: ['private_key_sealed'] })}, private_key_sealed IS NOT NULL AS has_key`;

export function vpnUserView(u: VpnUserRow, now = new Date()) {
  const configStatus = u.config_read_at
    ? ('read' as const)
    : u.has_key && u.vault_expires_at > now
      ? ('unread' as const)
      : ('expired' as const);
  return {
    uuid: u.uuid,
    vpc_uuid: u.vpc_uuid,
    name: u.name,
    status: u.status,
    public_key: u.public_key,
    address_v4: u.address_v4,
    config_status: configStatus,
    vault_expires_at: isoRequired(u.vault_expires_at),
    config_read_at: iso(u.config_read_at),
    failure_reason: u.failure_reason,
    created_at: isoRequired(u.created_at),
  };
}

export const siteConnectionSchema = obj({
  uuid: uuid().required(),
  vpc_uuid: uuid().required(),
  gateway_uuid: uuid().required(),
  name: str().required(),
  status: oneOf(VPC_STATUSES).required(),
  public_ip: str().required(),
  remote_address: str().required(),
  remote_cidrs: arr(str().required()).required(),
  tunnels: arr(obj({ index: yup.number().strict().integer().required() })).required(),
  monthly_price: obj({ amount: num().required(), currency: str().required() }).required(),
  failure_reason: str().nullable().defined(),
  created_at: timestamp().required(),
});

/** A connection with its monthly price (billable_items, joined). Never tunnels_sealed: the pre-shared keys stay in the database. */
export type SiteConnectionRow = Omit<VpcSiteConnection, 'tunnels_sealed'> & {
  amount: string | null;
  currency: string | null;
};

export const SITE_CONNECTION_SELECT = `
  SELECT ${columnsOf(VpcSiteConnection, 'c', { except: ['tunnels_sealed'] })}, b.amount::text AS amount, b.currency
    FROM vpc_site_connections c
    LEFT JOIN billable_items b ON b.resource_type = 'site_connection' AND b.resource_uuid = c.uuid`;

export function siteConnectionView(c: SiteConnectionRow) {
  return {
    uuid: c.uuid,
    vpc_uuid: c.vpc_uuid,
    gateway_uuid: c.gateway_uuid,
    name: c.name,
    status: c.status,
    public_ip: c.public_ip,
    remote_address: c.remote_address,
    remote_cidrs: c.remote_cidrs,
    tunnels: Array.from({ length: c.tunnel_count }, (_, index) => ({ index })),
    monthly_price: { amount: Number(c.amount ?? 0), currency: c.currency ?? 'USD' },
    failure_reason: c.failure_reason,
    created_at: isoRequired(c.created_at),
  };
}
