/**
 * The workload network's policy as one nftables table per Berth instance (`inet berth_<tag>`),
 * rewritten whole, in one transaction, whenever a workload joins or leaves. The kernel
 * enforces it; nothing here inspects traffic.
 *
 * What a workload (an address of the instance's block) may do:
 * - answer what reached it (established and related traffic, both ways);
 * - ask the resolver at the gateway (DNS, UDP and TCP 53);
 * - reach an add-on server at the gateway on that server's port, when the add-on is
 *   attached to its app (`services`);
 * - reach another workload only when the pair is allowed (`peers`: an app of the same
 *   workspace whose target has `allow_connections`), on any port;
 * - go out to the world through NAT (masquerade), but never to another workload of the
 *   platform range, never to a private, shared or link-local range (the machine's LAN, a
 *   cloud's metadata service, a VPC it is not plugged into: those never leave the machine
 *   from a workload) and never to the host itself: the Temporal ports, the control database,
 *   the object store, the API's listeners and the machine's own services all live on the
 *   host, and everything a workload sends to the host but the above is dropped.
 *
 * The host reaches workloads freely (the ingress, public ports, health checks): that is
 * not forwarded traffic, and replies come back as established.
 *
 * Other tables on the same hooks (another Berth instance's, the machine's own) see every
 * packet too: this table only drops what concerns its own block, and accepts nothing for
 * anyone else (an accept here is not final for other tables).
 */

export interface PolicyState {
  /** `berth_<tag>`: the instance's table. */
  table: string;
  /** The instance's block (CIDR text) and the whole platform range. */
  block: string;
  range: string;
  gateway: string;
  /** Allowed workload -> workload pairs (any port). */
  peers: Array<[string, string]>;
  /** Allowed workload -> gateway:port pairs (add-on servers). */
  services: Array<[string, number]>;
  /** The instance's host-side interfaces and the one address each may send from. */
  interfaces: Array<[string, string]>;
  /** Platform services every workload may use at the gateway (the object store's S3 side). */
  platformPorts: number[];
  /** Host-side interfaces' common prefix (never NAT'ed towards them). */
  interfacePrefix: string;
}

/** Ranges a workload's traffic never goes to through the host (RFC 1918, RFC 6598 shared, link-local). */
export const PRIVATE_RANGES = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16'];

const elements = (items: string[]) => (items.length === 0 ? '' : ` elements = { ${items.join(', ')} };`);

/** The nft script that replaces the instance's table with `state`, atomically. */
export function policyScript(s: PolicyState): string {
  const peers = s.peers.map(([a, b]) => `${a} . ${b}`);
  const services = s.services.map(([a, port]) => `${a} . ${port}`);
  const ours = s.interfaces.map(([name]) => `"${name}"`);
  const sources = s.interfaces.map(([name, address]) => `"${name}" . ${address}`);
  return [
    `add table inet ${s.table}`,
    `delete table inet ${s.table}`,
    `table inet ${s.table} {`,
    `  set peers { type ipv4_addr . ipv4_addr;${elements(peers)} }`,
    `  set services { type ipv4_addr . inet_service;${elements(services)} }`,
    `  set ours { type ifname;${elements(ours)} }`,
    `  set sources { type ifname . ipv4_addr;${elements(sources)} }`,
    // a workload sends from its own address only: every rule below may trust the source
    '  chain prerouting {',
    '    type filter hook prerouting priority raw; policy accept;',
    '    iifname @ours iifname . ip saddr != @sources drop',
    '    iifname @ours meta protocol != ip drop',
    '  }',
    '  chain input {',
    '    type filter hook input priority filter; policy accept;',
    '    iifname @ours ct state established,related accept',
    `    iifname @ours ip daddr ${s.gateway} meta l4proto { tcp, udp } th dport 53 accept`,
    `    iifname @ours ip daddr ${s.gateway} ip saddr . tcp dport @services accept`,
    ...(s.platformPorts.length > 0
      ? [`    iifname @ours ip daddr ${s.gateway} tcp dport { ${s.platformPorts.join(', ')} } accept`]
      : []),
    '    iifname @ours drop',
    '  }',
    '  chain forward {',
    '    type filter hook forward priority filter; policy accept;',
    `    ip daddr ${s.block} ct state established,related accept`,
    `    ip saddr ${s.block} ct state established,related accept`,
    `    ip saddr ${s.block} ip saddr . ip daddr @peers accept`,
    `    ip daddr ${s.block} drop`,
    `    ip saddr ${s.block} ip daddr ${s.range} drop`,
    `    ip saddr ${s.block} ip daddr { ${PRIVATE_RANGES.join(', ')} } drop`,
    '  }',
    '  chain postrouting {',
    '    type nat hook postrouting priority srcnat; policy accept;',
    `    ip saddr ${s.block} ip daddr != ${s.range} oifname != "${s.interfacePrefix}*" masquerade`,
    '  }',
    '}',
    '',
  ].join('\n');
}

/**
 * Inside a workload's namespace: connections to a platform service's loopback address go
 * to the gateway (where Berth forwards them to the machine's loopback), so the endpoint the
 * API shows (the object store's, on loopback) works unchanged from inside. The packets leave
 * from the workload's own address (route_localnet lets them out of loopback; masquerade
 * gives them the address).
 */
export function loopbackForwardScript(gateway: string, services: Array<{ host: string; port: number }>): string {
  return [
    'table ip berth_platform {',
    '  chain output {',
    '    type nat hook output priority -100; policy accept;',
    ...services.map((s) => `    ip daddr ${s.host} tcp dport ${s.port} dnat to ${gateway}`),
    '  }',
    '  chain postrouting {',
    '    type nat hook postrouting priority srcnat; policy accept;',
    '    ip saddr 127.0.0.0/8 oifname "eth0" masquerade',
    '  }',
    '}',
    '',
  ].join('\n');
}
