import { isIP } from 'node:net';
import { checkNamespace, isRange } from './checks';

/**
 * A site-to-site IPsec tunnel (IKEv2, pre-shared key) as strongSwan's charon runs it, and
 * the files it is configured from (pure: no I/O). Every value is checked before it reaches
 * a file; the key is written base64-encoded (`0s...`), so no character of it can break out.
 */

export interface SiteTunnelRef {
  /** The `ip netns` namespace the tunnel ends in (one charon per namespace). */
  namespace: string;
  /** The tunnel's name in that charon: letters, digits, `-` and `_`. */
  name: string;
}

export interface SiteTunnelSpec extends SiteTunnelRef {
  /** This end's address (IKE and ESP-in-UDP are sent from it). */
  localAddress: string;
  remoteAddress: string;
  /** Ranges behind this end (e.g. the VPC's range). */
  localCidrs: string[];
  /** Ranges behind the remote end. */
  remoteCidrs: string[];
  /** Opened from its sealed column inside the activity; written only to the tunnel's 0600 file. */
  preSharedKey: string;
  /** true: this end brings the tunnel up and back up (dead peer detection); false: it answers only. */
  initiate: boolean;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$/;

export function checkTunnelRef(ref: SiteTunnelRef): void {
  checkNamespace(ref.namespace);
  if (!NAME.test(ref.name)) throw new Error(`not a tunnel name: ${ref.name}`);
}

/** Throws (naming the field, never the key) when the spec is malformed. */
export function checkTunnelSpec(spec: SiteTunnelSpec): void {
  checkTunnelRef(spec);
  for (const [field, value] of [
    ['localAddress', spec.localAddress],
    ['remoteAddress', spec.remoteAddress],
  ] as const)
    if (isIP(value) === 0) throw new Error(`${field} is not an address: ${value}`);
  for (const [field, ranges] of [
    ['localCidrs', spec.localCidrs],
    ['remoteCidrs', spec.remoteCidrs],
  ] as const) {
    if (ranges.length === 0) throw new Error(`${field} is empty`);
    for (const r of ranges) if (!isRange(r)) throw new Error(`${field} holds a value that is not a range: ${r}`);
  }
  if (spec.preSharedKey.length < 8) throw new Error('the pre-shared key is shorter than 8 characters');
}

/**
 * charon's own configuration for one namespace: the userspace ESP (kernel-libipsec, a TUN
 * device: no kernel IPsec needed) and its control socket and log in `dir`.
 */
export function charonConf(dir: string): string {
  return `charon {
  load = random nonce aes sha1 sha2 hmac kdf gmp pem pkcs1 x509 pubkey kernel-libipsec kernel-netlink socket-default vici
  install_routes = yes
  plugins {
    vici {
      socket = unix://${dir}/run/charon.vici
    }
  }
  filelog {
    charon {
      path = ${dir}/charon.log
      default = 1
    }
  }
}
swanctl {
  load = pem pkcs1 x509 pubkey random nonce
}
`;
}

/** The tunnel's connection and its secret (the file is 0600: it holds the key). */
export function tunnelConf(spec: SiteTunnelSpec): string {
  const start = spec.initiate ? 'start' : 'none';
  return `connections {
  ${spec.name} {
    version = 2
    local_addrs = ${spec.localAddress}
    remote_addrs = ${spec.remoteAddress}
    encap = yes
    proposals = aes256-sha256-modp2048
    dpd_delay = 10s
    local {
      auth = psk
      id = ${spec.localAddress}
    }
    remote {
      auth = psk
      id = ${spec.remoteAddress}
    }
    children {
      ${spec.name} {
        local_ts = ${spec.localCidrs.join(', ')}
        remote_ts = ${spec.remoteCidrs.join(', ')}
        esp_proposals = aes256-sha256
        start_action = ${start}
        dpd_action = ${spec.initiate ? 'restart' : 'clear'}
        close_action = ${start}
      }
    }
  }
}
secrets {
  ike-${spec.name} {
    id-1 = ${spec.localAddress}
    id-2 = ${spec.remoteAddress}
    secret = 0s${Buffer.from(spec.preSharedKey, 'utf8').toString('base64')}
  }
}
`;
}

/** The namespace's swanctl.conf: every tunnel file of the folder. */
export const SWANCTL_CONF = 'include tunnels/*.conf\n';
