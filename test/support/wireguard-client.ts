import { execFileSync } from 'node:child_process';
import { findBinary } from '../../activities/provider/local/data/commands';
import { readingPipe } from '../../activities/provider/local/vpn/wireguard';
import { startWireguardGo } from '../../activities/provider/local/vpn/wireguard-go';

/** Parses a wg-quick file strictly: sections, `Key = Value` lines, nothing else. */
export function parseWireguard(text: string): Record<string, Record<string, string>> {
  const sections: Record<string, Record<string, string>> = {};
  let current: Record<string, string> | null = null;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const header = /^\[(Interface|Peer)\]$/.exec(line);
    if (header) {
      if (sections[header[1]!]) throw new Error(`duplicate [${header[1]}]`);
      current = sections[header[1]!] = {};
      continue;
    }
    const kv = /^([A-Za-z]+) = (.+)$/.exec(line);
    if (!kv || !current) throw new Error(`not a WireGuard line: ${line}`);
    current[kv[1]!] = kv[2]!;
  }
  return sections;
}

/** Why a WireGuard test cannot run here (null when it can): it needs root and the Debian packages. */
export function wireguardTestSkipReason(): string | null {
  if (process.getuid?.() !== 0) return 'not root: network namespaces and TUN devices need root';
  const missing = ['ip', 'wg', 'wireguard-go'].filter((b) => !findBinary([b], undefined));
  if (missing.length > 0)
    return `${missing.join(', ')} not installed (apt-get install wireguard-go wireguard-tools iproute2)`;
  return null;
}

export interface WireguardClient {
  namespace: string;
  interfaceName: string;
  /** The peer's latest handshake (unix seconds, 0 when none). */
  latestHandshake(): number;
}

const inNs = (ns: string, argv: string[], input?: string) =>
  execFileSync('ip', ['netns', 'exec', ns, ...argv], {
    input: input ?? '',
    stdio: ['pipe', 'pipe', 'pipe'],
  }).toString();

/**
 * A laptop: wireguard-go in `namespace`, set up from a wg-quick configuration file the way
 * wg-quick does it: the file without its wg-quick lines (Address, DNS) through `wg setconf`
 * (on stdin), then the address, the link and a route for each AllowedIPs range. `endpoint`
 * replaces the file's Endpoint (the test link address instead of a public name).
 */
export async function wireguardClient(
  namespace: string,
  interfaceName: string,
  configFile: string,
  endpoint: string,
): Promise<WireguardClient> {
  const conf = parseWireguard(configFile);
  const iface = conf.Interface!;
  const peer = conf.Peer!;
  const setconf = [
    '[Interface]',
    `PrivateKey = ${iface.PrivateKey}`,
    '',
    '[Peer]',
    `PublicKey = ${peer.PublicKey}`,
    `Endpoint = ${endpoint}`,
    `AllowedIPs = ${peer.AllowedIPs}`,
    `PersistentKeepalive = ${peer.PersistentKeepalive}`,
    '',
  ].join('\n');
  await startWireguardGo({
    ip: findBinary(['ip'], undefined)!,
    wireguardGo: findBinary(['wireguard-go'], undefined)!,
    namespace,
    interfaceName,
    env: { PATH: process.env.PATH },
    ready: async () => {
      try {
        inNs(namespace, ['wg', 'show', interfaceName]);
        return true;
      } catch {
        return false;
      }
    },
  });
  inNs(namespace, readingPipe(['wg', 'setconf', interfaceName, '/dev/stdin']), setconf);
  inNs(namespace, ['ip', 'addr', 'add', iface.Address!, 'dev', interfaceName]);
  inNs(namespace, ['ip', 'link', 'set', interfaceName, 'up']);
  for (const range of peer.AllowedIPs!.split(',').map((r) => r.trim()))
    inNs(namespace, ['ip', 'route', 'replace', range, 'dev', interfaceName]);
  return {
    namespace,
    interfaceName,
    latestHandshake: () => Number(inNs(namespace, ['wg', 'show', interfaceName, 'latest-handshakes']).split('\t')[1]),
  };
}
