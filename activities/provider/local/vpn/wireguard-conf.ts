import { isIP } from 'node:net';
import { checkNamespace, isRange } from './checks';
import { isWireguardKey } from '../../../../domain/wireguard';

/**
 * What a WireGuard gateway is made of, checked before anything reaches `ip` or `wg`, and
 * the `wg syncconf` text it is configured from (pure: no I/O).
 */

/** A peer of the gateway: a VPN user's device, allowed exactly its own pool address. */
export interface WireguardPeer {
  publicKey: string;
  /** The device's address in the VPN pool (a host, allowed as /32 or /128). */
  address: string;
  /** Ranges behind the device (a site's network it routes for): sent to it too. */
  routes?: string[];
}

/** Names one gateway on this machine. */
export interface WireguardRef {
  /** The `ip netns` namespace the interface lives in (its UDP port is that namespace's). */
  namespace: string;
  /** Unique on the machine (wireguard-go's control socket is /run/wireguard/<name>.sock): see wireguardInterfaceName. */
  interfaceName: string;
  /**
   * Where the UDP socket lives: `namespace` (default), or `host`: the interface is made in
   * the machine's own namespace and moved into `namespace`, so its socket stays on the
   * machine's addresses (WireGuard's namespace rule: the socket stays where the interface
   * was born) while its traffic enters and leaves in `namespace`.
   */
  socket?: 'namespace' | 'host';
}

export interface WireguardGatewaySpec extends WireguardRef {
  listenPort: number;
  /** Base64 X25519 private key: handed to `wg` on its standard input, never logged or put in an argv. */
  privateKey: string;
  /** The gateway's own address with its prefix, e.g. 10.224.0.3/32. */
  address: string;
  /** Ranges routed into the tunnel from the namespace, e.g. the VPN pool 10.224.0.128/25. */
  routes: string[];
  /** The whole peer set: peers not in it are removed. */
  peers: WireguardPeer[];
}

/** The interface of a gateway: `bwg` and 12 hex digits of its uuid (15 characters, the kernel's limit). */
export function wireguardInterfaceName(gatewayUuid: string): string {
  const hex = gatewayUuid.replace(/-/g, '').toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex)) throw new Error(`not a uuid: ${gatewayUuid}`);
  return `bwg${hex.slice(0, 12)}`;
}

const INTERFACE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,14}$/;

/** The host range a peer is allowed: its address as /32 (IPv4) or /128 (IPv6). */
export function peerAllowedIp(address: string): string {
  return `${address}/${isIP(address) === 6 ? 128 : 32}`;
}

/** Everything a peer is allowed: its own address, then the ranges behind it. */
export function peerAllowedIps(peer: WireguardPeer): string[] {
  return [peerAllowedIp(peer.address), ...(peer.routes ?? [])];
}

/** Throws (naming the field, never a key's value) when a reference is malformed. */
export function checkRef(ref: WireguardRef): void {
  checkNamespace(ref.namespace);
  if (!INTERFACE.test(ref.interfaceName)) throw new Error(`not an interface name: ${ref.interfaceName}`);
}

export function checkPeer(peer: WireguardPeer): void {
  if (!isWireguardKey(peer.publicKey)) throw new Error(`not a WireGuard public key: ${peer.publicKey}`);
  if (isIP(peer.address) === 0) throw new Error(`not a peer address: ${peer.address}`);
  for (const r of peer.routes ?? []) if (!isRange(r)) throw new Error(`not a range behind a peer: ${r}`);
}

/** Throws when the spec is malformed: nothing invalid reaches a command or a configuration line. */
export function checkSpec(spec: WireguardGatewaySpec): void {
  checkRef(spec);
  if (!Number.isInteger(spec.listenPort) || spec.listenPort < 1 || spec.listenPort > 65535)
    throw new Error(`not a UDP port: ${spec.listenPort}`);
  if (!isWireguardKey(spec.privateKey)) throw new Error('the gateway private key is not a WireGuard key');
  if (!isRange(spec.address)) throw new Error(`not an address with a prefix: ${spec.address}`);
  for (const r of spec.routes) if (!isRange(r)) throw new Error(`not a range: ${r}`);
  const keys = new Set<string>();
  for (const peer of spec.peers) {
    checkPeer(peer);
    if (keys.has(peer.publicKey)) throw new Error(`peer ${peer.publicKey} is listed twice`);
    keys.add(peer.publicKey);
  }
}

/** The `wg syncconf` text of a gateway: its key and port, and exactly its peers. */
export function gatewayConf(spec: Pick<WireguardGatewaySpec, 'privateKey' | 'listenPort' | 'peers'>): string {
  const lines = ['[Interface]', `PrivateKey = ${spec.privateKey}`, `ListenPort = ${spec.listenPort}`];
  for (const peer of spec.peers)
    lines.push('', '[Peer]', `PublicKey = ${peer.publicKey}`, `AllowedIPs = ${peerAllowedIps(peer).join(', ')}`);
  return `${lines.join('\n')}\n`;
}

/**
 * Peers from `wg show <if> allowed-ips` ("<public key>\t<range> <range>..." per line; "(none)"
 * when empty): the first host range is the peer's address (wg lists them in its own order),
 * the others (if any) its routes.
 */
export function parseAllowedIps(output: string): WireguardPeer[] {
  const peers: WireguardPeer[] = [];
  for (const line of output.split('\n')) {
    const [publicKey, ranges] = line.trim().split('\t');
    if (!publicKey) continue;
    const all = (ranges ?? '').split(' ').filter((r) => r.includes('/'));
    const own = all.find((r) => r.endsWith('/32') || r.endsWith('/128'));
    const rest = all.filter((r) => r !== own);
    peers.push({ publicKey, address: own ? own.split('/')[0]! : '', ...(rest.length > 0 ? { routes: rest } : {}) });
  }
  return peers;
}
