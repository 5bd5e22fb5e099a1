import ipaddr from 'ipaddr.js';

/**
 * Address math of VPCs (pure; used by the API, the activities and the vpcCreate workflow).
 *
 * Layout of a VPC's IPv4 range (docs/decisions.md, VPC networking):
 * - the first /24 is reserved for the platform: router = base + 1, resolver = base + 2,
 *   VPN terminators from base + 3, and the upper half (/25) is the VPN client pool;
 * - the `default` subnet is the /24 right after it (10.224.1.0/24 on 10.224.0.0/16);
 * - the IPv6 range is a ULA /48 derived from the VPC's uuid (stable, RFC 4193 style), and a
 *   subnet's /64 is derived from where its IPv4 range sits in the VPC.
 */

export interface Cidr4 {
  /** Network address as an unsigned 32-bit integer. */
  base: number;
  prefix: number;
}

export const DEFAULT_VPC_CIDR = '10.224.0.0/16';
/** The smallest VPC range: /22 (a longer prefix is "smaller than /22"). */
export const VPC_MAX_PREFIX = 22;
/** The largest VPC range allowed (the biggest RFC1918 block). */
export const VPC_MIN_PREFIX = 8;
/** Subnets: from /16 down to /29 (at least a handful of addresses). */
export const SUBNET_MIN_PREFIX = 16;
export const SUBNET_MAX_PREFIX = 29;

export const RFC1918 = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'] as const;

const CIDR4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

function toUint(a: number, b: number, c: number, d: number): number {
  return ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;
}

export function mask(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

export function size(c: Cidr4): number {
  return 2 ** (32 - c.prefix);
}

/** Parses "a.b.c.d/n" strictly (decimal octets without leading zeros); null when malformed. */
export function parseCidr4(text: string): Cidr4 | null {
  const m = CIDR4.exec(text);
  if (!m) return null;
  const parts = m.slice(1, 5);
  if (parts.some((p) => (p.length > 1 && p.startsWith('0')) || Number(p) > 255)) return null;
  if (m[5]!.length > 1 && m[5]!.startsWith('0')) return null;
  const prefix = Number(m[5]);
  if (prefix > 32) return null;
  const [a, b, c, d] = parts.map(Number) as [number, number, number, number];
  return { base: toUint(a, b, c, d), prefix };
}

/** Host bits are zero: "10.224.0.0/16", not "10.224.1.0/16". */
export function isNetworkAddress(c: Cidr4): boolean {
  return (c.base & mask(c.prefix)) >>> 0 === c.base;
}

export function networkOf(c: Cidr4): Cidr4 {
  return { base: (c.base & mask(c.prefix)) >>> 0, prefix: c.prefix };
}

export function formatAddress4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

export function formatCidr4(c: Cidr4): string {
  return `${formatAddress4(c.base)}/${c.prefix}`;
}

export function cidr4(text: string): Cidr4 {
  const c = parseCidr4(text);
  if (!c) throw new Error(`not an IPv4 range: ${text}`);
  return c;
}

export function last(c: Cidr4): number {
  return c.base + size(c) - 1;
}

export function contains(outer: Cidr4, inner: Cidr4): boolean {
  return inner.prefix >= outer.prefix && inner.base >= outer.base && last(inner) <= last(outer);
}

export function overlaps(a: Cidr4, b: Cidr4): boolean {
  return a.base <= last(b) && b.base <= last(a);
}

export function isRfc1918(c: Cidr4): boolean {
  return RFC1918.some((r) => contains(cidr4(r), c));
}

export interface RangeProblem {
  rule:
    | 'format'
    | 'network_address'
    | 'rfc1918'
    | 'too_small'
    | 'too_large'
    | 'platform_network'
    | 'outside_vpc'
    | 'reserved'
    | 'overlap';
  message: string;
}

/**
 * Why a VPC range is refused (empty when accepted): not a network address, not inside
 * RFC1918, smaller than /22, or overlapping one of the platform's own networks.
 */
export function vpcRangeProblems(text: string, platformNetworks: readonly string[]): RangeProblem[] {
  const c = parseCidr4(text);
  if (!c) return [{ rule: 'format', message: `${text} is not an IPv4 range such as 10.224.0.0/16` }];
  const problems: RangeProblem[] = [];
  if (!isNetworkAddress(c)) {
    problems.push({
      rule: 'network_address',
      message: `${text} has host bits set; the range is ${formatCidr4(networkOf(c))}`,
    });
  }
  const net = networkOf(c);
  if (!isRfc1918(net))
    problems.push({
      rule: 'rfc1918',
      message: `${text} is not a private (RFC1918) range: use 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16`,
    });
  if (net.prefix > VPC_MAX_PREFIX)
    problems.push({ rule: 'too_small', message: `${text} is smaller than /${VPC_MAX_PREFIX}` });
  for (const p of platformNetworks) {
    const platform = parseCidr4(p);
    if (platform && overlaps(net, platform)) {
      problems.push({ rule: 'platform_network', message: `${text} overlaps the platform network ${p}` });
    }
  }
  return problems;
}

/** The first /24 of the range: router, resolver, VPN terminators and the VPN client pool. */
export function reservedBlock(vpc: Cidr4): Cidr4 {
  return { base: vpc.base, prefix: 24 };
}

/** The `default` subnet: the /24 after the reserved block. */
export function defaultSubnet(vpc: Cidr4): Cidr4 {
  return { base: vpc.base + 256, prefix: 24 };
}

export function routerV4(vpc: Cidr4): string {
  return formatAddress4(vpc.base + 1);
}

/** The resolver: the base of the range plus two. */
export function resolverV4(vpc: Cidr4): string {
  return formatAddress4(vpc.base + 2);
}

/**
 * The address a gateway kind's VPN terminator holds in the VPC: base + 3 onward, one per
 * kind in the order of GATEWAY_KINDS (wireguard at base + 3). Peer routes of a kind go toward it.
 */
export function vpnTerminatorV4(vpc: Cidr4, kind: GatewayKind): string {
  return formatAddress4(vpc.base + 3 + GATEWAY_KINDS.indexOf(kind));
}

/** The VPN client pool: the upper half of the reserved /24. */
export function vpnPoolV4(vpc: Cidr4): Cidr4 {
  return { base: vpc.base + 128, prefix: 25 };
}

/** Usable client addresses of the VPN pool (its first and last address are left out). */
export function vpnPoolAddresses(pool: Cidr4): string[] {
  const out: string[] = [];
  for (let n = pool.base + 1; n < last(pool); n++) out.push(formatAddress4(n));
  return out;
}

/**
 * The VPC's IPv6 range: the ULA prefix fd00::/8 with a 40-bit global id taken from the
 * random bits at the end of the VPC's uuid (v4), so it is stable for the VPC forever and
 * needs no stored randomness.
 */
export function ulaPrefixOf(vpcUuid: string): string {
  const hex = vpcUuid.replace(/-/g, '').toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex)) throw new Error(`not a uuid: ${vpcUuid}`);
  const id = hex.slice(-10);
  const bytes = [0xfd, ...[0, 2, 4, 6, 8].map((i) => parseInt(id.slice(i, i + 2), 16)), ...new Array(10).fill(0)];
  return `${ipaddr.fromByteArray(bytes).toString()}/48`;
}

/**
 * A subnet's /64 inside the VPC's /48: the 16-bit subnet id is the subnet's offset in the
 * VPC's IPv4 range (shifted right when the VPC is larger than a /16).
 */
export function subnetV6Of(vpcV6: string, vpc: Cidr4, subnet: Cidr4): string {
  const shift = Math.max(0, 32 - vpc.prefix - 16);
  const id = Math.floor((subnet.base - vpc.base) / 2 ** shift) & 0xffff;
  return subnetV6ById(vpcV6, id);
}

export function subnetV6ById(vpcV6: string, id: number): string {
  const [addr] = ipaddr.IPv6.parseCIDR(vpcV6);
  const bytes = addr.toByteArray();
  bytes[6] = (id >>> 8) & 255;
  bytes[7] = id & 255;
  for (let i = 8; i < 16; i++) bytes[i] = 0;
  return `${ipaddr.fromByteArray(bytes).toString()}/64`;
}

/** Whether an IPv6 range (text) lies inside another, e.g. a subnet's /64 inside the VPC's /48. */
export function v6Within(outer: string, inner: string): boolean {
  if (!ipaddr.IPv6.isValidCIDR(inner) || !ipaddr.IPv6.isValidCIDR(outer)) return false;
  const [o, op] = ipaddr.IPv6.parseCIDR(outer);
  const [i, ip] = ipaddr.IPv6.parseCIDR(inner);
  return ip >= op && i.match(o, op);
}

/** A /48../64 IPv6 range whose host bits are zero. */
export function isV6Network(text: string): boolean {
  if (!ipaddr.IPv6.isValidCIDR(text)) return false;
  const [addr, prefix] = ipaddr.IPv6.parseCIDR(text);
  return (
    ipaddr.IPv6.networkAddressFromCIDR(text).toNormalizedString() === addr.toNormalizedString() &&
    prefix >= 48 &&
    prefix <= 64
  );
}

export function v6Overlaps(a: string, b: string): boolean {
  const [aa, ap] = ipaddr.IPv6.parseCIDR(a);
  const [ba, bp] = ipaddr.IPv6.parseCIDR(b);
  return ap <= bp ? ba.match(aa, ap) : aa.match(ba, bp);
}

/**
 * Why a subnet's IPv4 range is refused inside a VPC: outside the VPC, in the reserved
 * block, the wrong size, or overlapping a sibling subnet. Empty when accepted.
 */
export function subnetProblems(vpcText: string, text: string, siblings: readonly string[]): RangeProblem[] {
  const vpc = cidr4(vpcText);
  const c = parseCidr4(text);
  if (!c) return [{ rule: 'format', message: `${text} is not an IPv4 range such as 10.224.2.0/24` }];
  if (!isNetworkAddress(c))
    return [
      { rule: 'network_address', message: `${text} has host bits set; the range is ${formatCidr4(networkOf(c))}` },
    ];
  const problems: RangeProblem[] = [];
  if (c.prefix < SUBNET_MIN_PREFIX)
    problems.push({ rule: 'too_large', message: `${text} is larger than /${SUBNET_MIN_PREFIX}` });
  if (c.prefix > SUBNET_MAX_PREFIX)
    problems.push({ rule: 'too_small', message: `${text} is smaller than /${SUBNET_MAX_PREFIX}` });
  if (!contains(vpc, c)) {
    problems.push({ rule: 'outside_vpc', message: `${text} is not inside the VPC range ${vpcText}` });
    return problems;
  }
  if (overlaps(reservedBlock(vpc), c)) {
    problems.push({
      rule: 'reserved',
      message: `${text} overlaps ${formatCidr4(reservedBlock(vpc))}, reserved for the router, resolver and VPN`,
    });
  }
  for (const s of siblings) {
    const sibling = parseCidr4(s);
    if (sibling && overlaps(sibling, c))
      problems.push({ rule: 'overlap', message: `${text} overlaps the subnet ${s}` });
  }
  return problems;
}

export interface VpcAddressing {
  cidrV6: string;
  resolverV4: string;
  routerV4: string;
  vpnPoolV4: string;
}

/** What the creation workflow derives for a VPC (deterministic: safe in workflow code). */
export function deriveVpcAddressing(vpcUuid: string, cidrV4: string): VpcAddressing {
  const vpc = cidr4(cidrV4);
  return {
    cidrV6: ulaPrefixOf(vpcUuid),
    resolverV4: resolverV4(vpc),
    routerV4: routerV4(vpc),
    vpnPoolV4: formatCidr4(vpnPoolV4(vpc)),
  };
}

/** Gateway kinds: WireGuard and the two access kinds (docs/decisions.md names them). */
export const GATEWAY_KINDS = ['wireguard', 'zero_trust', 'mesh'] as const;
export type GatewayKind = (typeof GATEWAY_KINDS)[number];

/** A VPC's status, and that of its VPN gateways, VPN users and site connections. */
export const VPC_STATUSES = ['pending', 'active', 'failed', 'deleting'] as const;
export type VpcStatus = (typeof VPC_STATUSES)[number];
/** A VPC attachment's status. */
export const VPC_ATTACHMENT_STATUSES = ['attaching', 'attached', 'detaching', 'failed'] as const;
export type VpcAttachmentStatus = (typeof VPC_ATTACHMENT_STATUSES)[number];

/** Workload types an attachment may name. */
export const ATTACHABLE_TYPES = ['App', 'Service', 'Addon'] as const;
export type AttachableType = (typeof ATTACHABLE_TYPES)[number];

/**
 * The attachment's DNS name: resolves to the pod address (and may go stale after a
 * rollout). A cron job has no long-running pod to name, so it gets none.
 */
export function attachmentFqdn(
  workload: { name: string; cronJob: boolean },
  vpcName: string,
  regionDomain: string,
): string | null {
  if (workload.cronJob) return null;
  return `${workload.name}.${vpcName}.vpc.${regionDomain}`.toLowerCase();
}

/** Whether a name has the shape of an attachment's fqdn (`<workload>.<vpc>.vpc.<region domain>`). */
export function isAttachmentFqdn(name: string): boolean {
  return /^[^.]+\.[^.]+\.vpc\.[^.]/.test(name.toLowerCase());
}

/** Signal the API sends a device's vpnUserCreate workflow once its configuration was read. */
export const VAULT_EMPTIED_SIGNAL = 'vaultEmptied';

/**
 * Why the local driver makes no IPsec site-to-site connections (docs/decisions.md): a VPC's
 * router has no link to anything (its isolation), strongSwan's charon keeps its IKE and ESP
 * sockets in the namespace it runs in (unlike WireGuard, whose socket stays where its
 * interface was born), and the region's public addresses (BERTH_PUBLIC_IPV4_POOLS) are not
 * this machine's, so no far side could reach the tunnel. The API answers 422 with this.
 */
export const LOCAL_NO_SITE_TUNNELS =
  'the local driver makes no IPsec site-to-site connections: a VPC router on one machine has no link to the outside for IKE and ESP (the VPC stays isolated), and the region public address would not be this machine; connect remote machines as WireGuard VPN users instead';

/** Why a provider-hosted access gateway (zero_trust, mesh) fails on the local driver. */
export function accessProviderUnreachable(kind: string): string {
  return `the ${kind} connector cannot reach its provider from this machine: the local driver has no connection to the provider's service (the gateway and its sealed credentials are kept; delete it, or use a wireguard gateway)`;
}
