import ipaddr from 'ipaddr.js';

/**
 * Where a webhook may deliver (Delivery and verification, 9): publicly reachable
 * destinations only. An address is refused unless it is global unicast: loopback,
 * RFC1918, link-local (the metadata address 169.254.169.254 too), CGNAT 100.64.0.0/10,
 * 0.0.0.0/8, multicast, broadcast and reserved IPv4; IPv6 ::1, ::, fc00::/7, fe80::/10,
 * multicast and everything outside 2000::/3. IPv4 embedded in IPv6 (IPv4-mapped
 * ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16) is judged by its IPv4 address;
 * IPv4-compatible ::/96, local NAT64 64:ff9b:1::/48, SIIT and Teredo are refused outright.
 * The operator allow-list (BERTH_WEBHOOK_ALLOW_CIDRS) lets exactly the listed ranges
 * through, matched against the address as written (an IPv4 range never admits an
 * IPv6 form of it). Hostnames `localhost`, `*.localhost`, `*.local`, `*.internal` and
 * single-label names are refused whatever the allow-list says.
 */
export type Verdict = { allowed: true } | { allowed: false; reason: string };

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];
export type AllowList = readonly Range[];

const ALLOWED: Verdict = { allowed: true };
const refuse = (reason: string): Verdict => ({ allowed: false, reason });

const V4_NAMES: Record<string, string> = {
  unspecified: 'is in the unspecified range 0.0.0.0/8',
  broadcast: 'is the broadcast address',
  multicast: 'is in multicast space',
  linkLocal: 'is in link-local space (169.254.0.0/16, incl. the metadata address)',
  loopback: 'is in loopback space',
  carrierGradeNat: 'is in CGNAT space (100.64.0.0/10)',
  private: 'is in private (RFC1918) space',
  reserved: 'is in reserved space',
  as112: 'is in reserved (AS112) space',
  amt: 'is in reserved (AMT) space',
};

const V6_NAMES: Record<string, string> = {
  unspecified: 'is the unspecified address',
  linkLocal: 'is in link-local space (fe80::/10)',
  multicast: 'is in multicast space',
  loopback: 'is the loopback address',
  uniqueLocal: 'is in unique-local space (fc00::/7)',
  deprecatedSiteLocal: 'is in site-local space (fec0::/10)',
  teredo: 'is a Teredo tunnel address',
  rfc6145: 'is an SIIT-translated address',
};

/** Parses an allow-list (of `variable`); throws on a malformed entry (refuse to start rather than guess). */
export function parseAllowList(cidrs: readonly string[], variable = 'BERTH_WEBHOOK_ALLOW_CIDRS'): AllowList {
  return cidrs.map((cidr) => {
    try {
      return cidr.includes('/')
        ? ipaddr.parseCIDR(cidr)
        : ([ipaddr.parse(cidr), ipaddr.parse(cidr).kind() === 'ipv4' ? 32 : 128] as Range);
    } catch {
      throw new Error(`${variable}: "${cidr}" is not an address range`);
    }
  });
}

function allowListed(addr: ipaddr.IPv4 | ipaddr.IPv6, allow: AllowList): boolean {
  return allow.some(([base, bits]) => base.kind() === addr.kind() && addr.match(base, bits));
}

function ipv4Verdict(addr: ipaddr.IPv4, shown: string): Verdict {
  const range = addr.range();
  if (range === 'unicast') return ALLOWED;
  return refuse(`${shown} ${V4_NAMES[range] ?? `is in ${range} space`}`);
}

function embeddedV4(addr: ipaddr.IPv6, offsetBytes: number): ipaddr.IPv4 {
  const bytes = addr.toByteArray();
  return new ipaddr.IPv4(bytes.slice(offsetBytes, offsetBytes + 4));
}

function ipv6Verdict(addr: ipaddr.IPv6, shown: string): Verdict {
  const parts = addr.parts;
  if (addr.isIPv4MappedAddress()) {
    const v4 = addr.toIPv4Address();
    return ipv4Verdict(v4, `${shown} (IPv4-mapped ${v4.toString()})`);
  }
  if (addr.match(ipaddr.IPv6.parse('64:ff9b::'), 96)) {
    const v4 = embeddedV4(addr, 12);
    return ipv4Verdict(v4, `${shown} (NAT64 of ${v4.toString()})`);
  }
  if (addr.match(ipaddr.IPv6.parse('64:ff9b:1::'), 48))
    return refuse(`${shown} is in local-use NAT64 space (64:ff9b:1::/48)`);
  if (addr.match(ipaddr.IPv6.parse('2002::'), 16)) {
    const v4 = embeddedV4(addr, 2);
    return ipv4Verdict(v4, `${shown} (6to4 of ${v4.toString()})`);
  }
  const range = addr.range();
  if (V6_NAMES[range]) return refuse(`${shown} ${V6_NAMES[range]}`);
  if (parts.slice(0, 6).every((p) => p === 0)) return refuse(`${shown} is an IPv4-compatible address (::/96)`);
  if (range !== 'unicast') return refuse(`${shown} is in ${range} space`);
  if ((parts[0]! & 0xe000) !== 0x2000) return refuse(`${shown} is outside global unicast space (2000::/3)`);
  return ALLOWED;
}

/** Whether one IP address (v4 or v6, no brackets) may be connected to. */
export function addressVerdict(address: string, allow: AllowList): Verdict {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.parse(address.replace(/^\[|\]$/g, ''));
  } catch {
    return refuse(`${address} is not an IP address`);
  }
  if (allowListed(addr, allow)) return ALLOWED;
  return addr.kind() === 'ipv4' ? ipv4Verdict(addr as ipaddr.IPv4, address) : ipv6Verdict(addr as ipaddr.IPv6, address);
}

/** Names that never leave the private network, whatever the allow-list says. */
export function hostnameVerdict(hostname: string): Verdict {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) return refuse(`${hostname} is a loopback name`);
  if (name === 'local' || name.endsWith('.local')) return refuse(`${hostname} is a link-local (.local) name`);
  if (name === 'internal' || name.endsWith('.internal')) return refuse(`${hostname} is an internal (.internal) name`);
  if (!name.includes('.')) return refuse(`${hostname} is a single-label name, not a public hostname`);
  return ALLOWED;
}

export type Destination = { ok: true; url: URL; host: string; literal: boolean } | { ok: false; reason: string };

/**
 * Parses and checks a destination URL: http or https, no credentials, and a host that
 * is either an allowed IP literal (every numeric form is normalised by the URL parser,
 * so 2130706433, 0x7f.1 and 127.1 are all 127.0.0.1) or a public hostname. A hostname's
 * addresses are checked separately, each time it is resolved.
 */
export function checkDestination(raw: string, allow: AllowList): Destination {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'is not a valid absolute URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return { ok: false, reason: `must use http or https, not ${url.protocol.replace(/:$/, '')}` };
  if (url.username || url.password) return { ok: false, reason: 'must not carry credentials (user:password@)' };
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (host === '') return { ok: false, reason: 'has no host' };
  const literal = ipaddr.isValid(host) && (host.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(host));
  const verdict = literal ? addressVerdict(host, allow) : hostnameVerdict(host);
  if (!verdict.allowed) return { ok: false, reason: `is refused: ${verdict.reason}` };
  return { ok: true, url, host, literal };
}

/** Every resolved address must be allowed: one private answer refuses the name. */
export function resolvedVerdict(hostname: string, addresses: readonly string[], allow: AllowList): Verdict {
  if (addresses.length === 0) return refuse(`${hostname} has no addresses`);
  for (const a of addresses) {
    const v = addressVerdict(a, allow);
    if (!v.allowed) return refuse(`${hostname} resolves to ${v.reason}`);
  }
  return ALLOWED;
}
