import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { run } from '../data/commands';
import { ip, NETNS_DIR } from '../network/namespace';
import { routerNamespace, routerPrefix, vpcRunDir } from './names';

/**
 * A VPC's router: a network namespace of its own holding the router and resolver addresses
 * (on its loopback), one bridge per subnet (made when the first workload plugs in), the
 * resolver, and the VPN terminators. It has no link to the host or to any other VPC: what
 * is in it reaches only the VPC's members, so two VPCs never see each other and a workload's
 * VPC side leads nowhere else. IPv4 forwarding is on inside it (subnet to subnet, subnet to
 * tunnel); its input hook keeps workloads off everything of the router but the resolver.
 */

export interface RouterSpec {
  tag: string;
  vpcUuid: string;
  routerV4: string;
  resolverV4: string;
}

/** Bridges of subnets are named `sn...` (names.ts): what arrives on them comes from workloads. */
export function routerPolicy(resolverV4: string): string {
  return [
    'table inet berth_vpc {}',
    'delete table inet berth_vpc',
    'table inet berth_vpc {',
    '  chain input {',
    '    type filter hook input priority filter; policy accept;',
    '    iifname "sn*" ct state established,related accept',
    `    iifname "sn*" ip daddr ${resolverV4} meta l4proto { tcp, udp } th dport 53 accept`,
    '    iifname "sn*" icmp type echo-request accept',
    '    iifname "sn*" drop',
    '  }',
    '  chain forward {',
    '    type filter hook forward priority filter; policy accept;',
    '    meta nfproto ipv6 drop',
    '  }',
    '}',
    '',
  ].join('\n');
}

/** Runs argv inside the router namespace. */
export const inRouter = (ns: string, argv: string[], input?: string): Promise<string> =>
  run(['ip', 'netns', 'exec', ns, ...argv], input === undefined ? {} : { input });

/** Makes the router, or brings one that exists (a previous run's, a retried call's) to the spec. Answers its namespace. */
export async function ensureRouter(spec: RouterSpec): Promise<string> {
  const ns = routerNamespace(spec.tag, spec.vpcUuid);
  if (!existsSync(path.join(NETNS_DIR, ns))) {
    await ip(['netns', 'add', ns]).catch((err: Error) => {
      if (!existsSync(path.join(NETNS_DIR, ns))) throw err; // a concurrent call made it
    });
  }
  await ip(
    ['-n', ns, '-batch', '-'],
    ['link set lo up', `addr replace ${spec.routerV4}/32 dev lo`, `addr replace ${spec.resolverV4}/32 dev lo`, ''].join(
      '\n',
    ),
  );
  await inRouter(ns, ['sysctl', '-q', '-w', 'net.ipv4.ip_forward=1']);
  await inRouter(ns, ['nft', '-f', '-'], routerPolicy(spec.resolverV4));
  mkdirSync(vpcRunDir(spec.tag, spec.vpcUuid), { recursive: true, mode: 0o755 });
  return ns;
}

/** Pids of the processes living in a namespace (its resolver, its VPN daemons). */
export async function namespacePids(ns: string): Promise<number[]> {
  const out = await ip(['netns', 'pids', ns]).catch(() => '');
  return out
    .split(/\s+/)
    .filter((p) => /^\d+$/.test(p))
    .map(Number);
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Ends every process of the namespace: TERM, then KILL after a grace period (bounded). */
export async function endProcesses(ns: string, graceMs = 2000): Promise<void> {
  const pids = await namespacePids(ns);
  for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGTERM');
  const until = Date.now() + graceMs;
  while (pids.some(alive) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
}

/**
 * Removes the router with everything in it: its processes end, and deleting the namespace
 * takes its bridges and the router ends of workloads' links (whose other ends vanish from
 * the workloads' namespaces with them). Idempotent.
 */
export async function removeRouter(tag: string, vpcUuid: string): Promise<void> {
  const ns = routerNamespace(tag, vpcUuid);
  if (existsSync(path.join(NETNS_DIR, ns))) {
    await endProcesses(ns);
    await ip(['netns', 'del', ns]).catch(() => {});
  }
  rmSync(vpcRunDir(tag, vpcUuid), { recursive: true, force: true });
}

/** The router namespaces this instance has in the kernel now. */
export function routerNamespaces(tag: string): string[] {
  try {
    return readdirSync(NETNS_DIR).filter((n) => n.startsWith(routerPrefix(tag)));
  } catch {
    return [];
  }
}
