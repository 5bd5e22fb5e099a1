/**
 * The network part of the data-plane driver: VPCs with their router and resolver,
 * workload attachments (which restart the workload), peer routes, VPN gateways and their
 * WireGuard peers, and IPsec site-to-site tunnels. Every operation is idempotent: calling
 * it again with the same identifiers changes nothing.
 */
export interface VpcSpec {
  vpcUuid: string;
  cidrV4: string;
  cidrV6: string;
  routerV4: string;
  resolverV4: string;
}

export interface AttachSpec {
  attachmentUuid: string;
  vpcUuid: string;
  workloadType: string;
  workloadUuid: string;
  subnetCidrV4: string | null;
  subnetCidrV6: string | null;
  /** `platform`: the workload keeps the platform's default route (public subnet); `vpc`: it goes through the VPC. */
  defaultRoute: 'platform' | 'vpc';
  /** The DNS name to publish for the pod address, or null (cron jobs). */
  fqdn: string | null;
}

export interface WorkloadRef {
  workloadType: string;
  workloadUuid: string;
}

export interface RouteSpec {
  routeUuid: string;
  cidr: string;
  gatewayKind: string;
}

export interface RouteResult {
  routeUuid: string;
  applied: boolean;
  reason?: string;
}

export interface GatewaySpec {
  gatewayUuid: string;
  vpcUuid: string;
  kind: string;
  /** WireGuard: the gateway's public key. */
  publicKey: string | null;
  /** Access kinds: their credentials (opened inside the activity, never in workflow history). */
  credentials: Record<string, string> | null;
}

export interface PeerSpec {
  deviceUuid: string;
  gatewayUuid: string;
  publicKey: string;
  address: string;
}

export interface TunnelSpec {
  connectionUuid: string;
  vpcUuid: string;
  gatewayUuid: string;
  publicIp: string;
  remoteAddress: string;
  remoteCidrs: string[];
  preSharedKeys: string[];
}

export interface NetworkDriver {
  createVpc(spec: VpcSpec): Promise<void>;
  createRouter(spec: VpcSpec): Promise<void>;
  createResolver(spec: VpcSpec): Promise<void>;
  deleteResolver(vpcUuid: string): Promise<void>;
  deleteRouter(vpcUuid: string): Promise<void>;
  /** Removes the VPC and everything still in it (routes, gateways, peers). */
  deleteVpc(vpcUuid: string): Promise<void>;
  /** Plugs the workload into the subnet; answers the pod's address in it. */
  attach(spec: AttachSpec): Promise<{ addressV4: string | null }>;
  detach(attachmentUuid: string): Promise<void>;
  /** Restarts a workload once per requestId (a retried call does not restart it again). */
  restartWorkload(requestId: string, workload: WorkloadRef, reason: string): Promise<void>;
  /** Installs exactly these routes in the VPC's router (replacing what was there). */
  applyRoutes(vpcUuid: string, routes: RouteSpec[]): Promise<RouteResult[]>;
  enableGateway(spec: GatewaySpec): Promise<void>;
  disableGateway(gatewayUuid: string): Promise<void>;
  addPeer(spec: PeerSpec): Promise<void>;
  removePeer(deviceUuid: string): Promise<void>;
  createTunnel(spec: TunnelSpec): Promise<void>;
  deleteTunnel(connectionUuid: string): Promise<void>;
}
