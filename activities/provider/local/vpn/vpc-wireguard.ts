import { cidr4, formatCidr4, vpnPoolV4, vpnTerminatorV4 } from '../../../../domain/vpc';
import { wireguardInterfaceName, type WireguardGatewaySpec, type WireguardPeer } from './wireguard-conf';

/**
 * A VPC's WireGuard gateway as the contract lays it out: its terminator at the VPC's
 * wireguard address (base + 3), the VPN pool routed into the tunnel, one peer per VPN user
 * allowed its pool address. The client configuration the API hands out (AllowedIPs: the
 * VPC's ranges; Endpoint: the gateway's) reaches it.
 */
export function vpcWireguardGateway(input: {
  gatewayUuid: string;
  /** The namespace the gateway runs in (the VPC's router namespace). */
  namespace: string;
  listenPort: number;
  /** The gateway's private key, opened from its sealed column inside the activity. */
  privateKey: string;
  cidrV4: string;
  users: WireguardPeer[];
}): WireguardGatewaySpec {
  const vpc = cidr4(input.cidrV4);
  return {
    namespace: input.namespace,
    interfaceName: wireguardInterfaceName(input.gatewayUuid),
    listenPort: input.listenPort,
    privateKey: input.privateKey,
    address: `${vpnTerminatorV4(vpc, 'wireguard')}/32`,
    routes: [formatCidr4(vpnPoolV4(vpc))],
    peers: input.users,
  };
}
