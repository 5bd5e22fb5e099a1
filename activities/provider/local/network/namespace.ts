import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { run } from '../data/commands';
import type { Address } from '../sandbox/launcher';
import { loopbackForwardScript } from './policy';

/** Where `ip netns` keeps named namespaces. */
export const NETNS_DIR = '/run/netns';

/** The common prefix of the host ends of workloads' veth pairs (the policy matches on it). */
export const IF_PREFIX = 'bw';

/** The host end of a namespace's veth pair (interface names have 15 characters at most). */
export const hostInterface = (ns: string): string =>
  `${IF_PREFIX}${createHash('sha256').update(ns).digest('hex').slice(0, 13)}`;

/** iproute2, with a batch on its standard input when given. */
export const ip = (args: string[], input?: string): Promise<string> =>
  run(['ip', ...args], input === undefined ? {} : { input });

/**
 * One workload's namespace: a veth pair (`eth0` inside, `hostIf` on the host), its address
 * as a /32 inside and a /32 route to it on the host (from the gateway), the default route to
 * the gateway, and the platform services led from its loopback to the gateway. A leftover of the
 * same name (a previous run's) goes first; a failure removes what was made.
 */
export async function makeNamespace(w: {
  ns: string;
  hostIf: string;
  address: string;
  gateway: string;
  platformServices: Address[];
}): Promise<void> {
  if (existsSync(path.join(NETNS_DIR, w.ns)) || existsSync(`/sys/class/net/${w.hostIf}`))
    await removeNamespace(w.ns, w.hostIf);
  try {
    await ip(['netns', 'add', w.ns]);
    await ip(['link', 'add', w.hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', w.ns]);
    await ip(['link', 'set', w.hostIf, 'up']);
    await ip(['route', 'add', `${w.address}/32`, 'dev', w.hostIf, 'src', w.gateway]);
    await ip(
      ['-n', w.ns, '-batch', '-'],
      [
        'link set lo up',
        `addr add ${w.address}/32 dev eth0`,
        'link set eth0 up',
        `route add ${w.gateway} dev eth0 scope link`,
        `route add default via ${w.gateway} dev eth0 src ${w.address}`,
        '',
      ].join('\n'),
    );
    if (w.platformServices.length > 0) {
      const inside = (argv: string[], input?: string) =>
        run(['nsenter', `--net=${path.join(NETNS_DIR, w.ns)}`, '--', ...argv], input === undefined ? {} : { input });
      await inside(['sysctl', '-q', '-w', 'net.ipv4.conf.eth0.route_localnet=1']);
      await inside(['nft', '-f', '-'], loopbackForwardScript(w.gateway, w.platformServices));
    }
  } catch (err) {
    await removeNamespace(w.ns, w.hostIf);
    throw err;
  }
}

/** Deleting the host end removes the pair and its route even while a process still holds the namespace (idempotent). */
export async function removeNamespace(ns: string, hostIf: string): Promise<void> {
  await ip(['link', 'del', hostIf]).catch(() => {});
  await ip(['netns', 'del', ns]).catch(() => {});
}
