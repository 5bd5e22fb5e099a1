/**
 * IPv4 arithmetic of the workload network: the platform range (BERTH_WORKLOAD_NETWORK,
 * default 10.200.0.0/13), the block one Berth instance holds in it, and the addresses in a
 * block. Pure functions; the kernel calls live in fabric.ts.
 */

/** An IPv4 network: its first address as a number and its prefix length. */
export interface Cidr {
  base: number;
  prefix: number;
}

/** The default platform range: 10.200.0.0 - 10.207.255.255, clear of the usual 10.0/16 and 10.255 setups. */
export const DEFAULT_WORKLOAD_RANGE = '10.200.0.0/13';

/** One instance's block: /22, 1,021 workloads (replicas, builds, cron runs) at once. */
export const BLOCK_PREFIX = 22;

export function ipToNumber(ip: string): number {
  const parts = ip.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255))
    throw new Error(`not an IPv4 address: ${ip}`);
  return ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
}

export function numberToIp(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

const mask = (prefix: number) => (prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0);

export function parseCidr(text: string): Cidr {
  const [ip, len] = text.split('/');
  const prefix = Number(len);
  if (!ip || !Number.isInteger(prefix) || prefix < 8 || prefix > BLOCK_PREFIX)
    throw new Error(
      `workload network ${text}: expected an IPv4 range from /8 to /${BLOCK_PREFIX}, such as 10.200.0.0/13`,
    );
  return { base: (ipToNumber(ip) & mask(prefix)) >>> 0, prefix };
}

export const formatCidr = (c: Cidr): string => `${numberToIp(c.base)}/${c.prefix}`;

/** How many blocks the range holds. */
export const blockCount = (range: Cidr): number => 2 ** (BLOCK_PREFIX - range.prefix);

/** The range's `index`th block. */
export const blockAt = (range: Cidr, index: number): Cidr => ({
  base: range.base + index * 2 ** (32 - BLOCK_PREFIX),
  prefix: BLOCK_PREFIX,
});

/** The block's gateway: its first host address (on the host's loopback; the workloads' resolver and add-on servers' address). */
export const gatewayOf = (block: Cidr): string => numberToIp(block.base + 1);

/** The addresses workloads get in a block: from .2 to the one before the broadcast address. */
export function workloadAddresses(block: Cidr): { first: number; last: number } {
  return { first: block.base + 2, last: block.base + 2 ** (32 - block.prefix) - 2 };
}
