import { ip } from '../network/namespace';
import { PEER_ROUTE_PROTOCOL } from './names';

/**
 * The VPC router's peer routes in the kernel: each range toward its gateway kind's
 * terminator interface, marked `proto 186` (names.ts), which is how they are told apart from
 * every other route of the router and read back: the kernel is the truth of what is installed.
 */

export interface InstalledPeerRoute {
  cidr: string;
  dev: string;
}

/** `ip -j route` writes a host route without its prefix. */
const withPrefix = (dst: string, family: 4 | 6) => (dst.includes('/') ? dst : `${dst}/${family === 4 ? 32 : 128}`);

/** The peer routes installed in the router namespace now. */
export async function installedPeerRoutes(ns: string): Promise<InstalledPeerRoute[]> {
  const out: InstalledPeerRoute[] = [];
  for (const family of [4, 6] as const) {
    const list = JSON.parse(
      await ip(['-n', ns, `-${family}`, '-j', 'route', 'show', 'proto', String(PEER_ROUTE_PROTOCOL)]),
    ) as Array<{ dst: string; dev?: string }>;
    for (const r of list) out.push({ cidr: withPrefix(r.dst, family), dev: r.dev ?? '' });
  }
  return out;
}

/**
 * Installs one range toward `dev`, or moves a peer route of the range already there; the
 * kernel's refusal, or null when it took it. A new range is added, never replaced: the kernel
 * refuses it where the router has a route of its own for that range (a subnet, the VPN pool).
 */
export async function installPeerRoute(
  ns: string,
  cidr: string,
  dev: string,
  installed: InstalledPeerRoute[],
): Promise<string | null> {
  const verb = installed.some((r) => r.cidr === cidr) ? 'replace' : 'add';
  try {
    await ip(['-n', ns, 'route', verb, cidr, 'dev', dev, 'proto', String(PEER_ROUTE_PROTOCOL)]);
    return null;
  } catch (err) {
    return kernelReason(err as Error);
  }
}

export async function withdrawPeerRoute(ns: string, route: InstalledPeerRoute): Promise<void> {
  await ip(['-n', ns, 'route', 'del', route.cidr, 'proto', String(PEER_ROUTE_PROTOCOL)]).catch((err: Error) => {
    if (!/No such process|not found/i.test(err.message)) throw err; // gone already
  });
}

/** The kernel's words from iproute2's error (its last line), without the command around them. */
function kernelReason(err: Error): string {
  const output = err.message.replace(/^.*? exited with \d+: /s, '');
  const last = output.split(' | ').pop()!.trim();
  return `the kernel refused the route: ${last.replace(/^Error: /, '') || err.message}`;
}
