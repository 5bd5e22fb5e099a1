import { createHash } from 'node:crypto';
import path from 'node:path';
import { cidr4 } from '../../../../domain/vpc';

/**
 * Names of what the VPC fabric makes in the kernel and on disk, all derived from the
 * instance's tag (a hash of its data directory, as the workload network's) and the VPC's or
 * the attachment's uuid, so a restarted Berth finds what it made and two instances on one
 * machine never collide. Interface names have 15 characters at most.
 */

const hex = (text: string, length: number) => createHash('sha256').update(text).digest('hex').slice(0, length);

/** The VPC's key in names: the first 12 hex digits of its uuid. */
export const vpcKey = (vpcUuid: string): string => vpcUuid.replace(/-/g, '').slice(0, 12).toLowerCase();

/** Router namespaces of one instance start with this (workload namespaces start with `berth-`). */
export const routerPrefix = (tag: string): string => `bvpc-${tag}-`;

/** The VPC's router namespace: its subnets' bridges, its resolver, its gateways. */
export const routerNamespace = (tag: string, vpcUuid: string): string => `${routerPrefix(tag)}${vpcKey(vpcUuid)}`;

/** Files of a VPC that its resolver (an unprivileged dnsmasq) reads: under /run, readable by all. */
export const vpcRunDir = (tag: string, vpcUuid: string): string =>
  path.join('/run/berth', `vpc-${tag}-${vpcKey(vpcUuid)}`);

/** A subnet's bridge in the router namespace, named by its range (unique within one VPC). */
export function subnetBridge(subnetCidrV4: string): string {
  const c = cidr4(subnetCidrV4);
  return `sn${(c.base >>> 0).toString(16).padStart(8, '0')}${c.prefix}`;
}

/** The two ends of one workload's link into a VPC: `router` on the subnet's bridge, `workload` in its namespace. */
export function plugInterfaces(workloadName: string, vpcUuid: string): { router: string; workload: string } {
  return { router: `vp${hex(`${workloadName}/${vpcUuid}`, 12)}`, workload: `vpc${vpcKey(vpcUuid).slice(0, 8)}` };
}

/**
 * The routing protocol number the router's peer routes carry (`ip route ... proto 186`): a
 * workload plugged in later reads the ranges from the kernel, which is the truth of what
 * the last apply installed (the database moves a route to `applied` after the restart).
 */
export const PEER_ROUTE_PROTOCOL = 186;
