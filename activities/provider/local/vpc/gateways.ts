import type { VpcGateways } from './driver';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { SecretBox } from '../../../../domain/secret-box';
import { accessProviderUnreachable, LOCAL_NO_SITE_TUNNELS } from '../../../../domain/vpc';
import type { GatewaySpec, PeerSpec, RouteResult, RouteSpec, TunnelSpec } from '../../../../platform/drivers/network';
import { ip, NETNS_DIR } from '../network/namespace';
import { vpcWireguardGateway } from '../vpn/vpc-wireguard';
import { createWireguard } from '../vpn/wireguard';
import { wireguardInterfaceName, type WireguardPeer, type WireguardRef } from '../vpn/wireguard-conf';
import {
  appliedPeerRoutes,
  devicesOf,
  deviceRow,
  gatewayRow,
  gatewaysOf,
  livePeerRoutes,
  peerRoutesByUuid,
  setEndpoint,
  type DeviceRow,
  type GatewayRow,
  type PeerRouteRow,
} from './gateway-rows';
import { gatewayEndpoint, gatewayPort } from './gateway-ports';
import { providerUnreachable } from './gateway-refusals';
import { routerNamespace } from './names';
import { installedPeerRoutes, installPeerRoute, withdrawPeerRoute } from './peer-routes';
import { routerNamespaces } from './router';

/**
 * The gateway side of the local VPC driver, in each VPC's router namespace:
 * - WireGuard gateways: an interface holding the terminator address (base + 3) with the VPN
 *   pool routed into it; its UDP socket stays on the machine (the interface is born in the
 *   machine's namespace and moved into the router's: docs/decisions.md), on a port of its
 *   own (gateway-ports.ts), which the gateway's endpoint names;
 * - VPN users: peers allowed their pool address (and the ranges behind them);
 * - peer routes: `proto 186` routes toward the kind's terminator; a WireGuard route is sent to
 *   the device its description names (the site's router), whose allowed IPs it joins;
 * - the access kinds and IPsec site tunnels: refused with the reason (gateway-refusals.ts).
 * Every operation reads what exists and makes it match; the private key is opened here and
 * reaches `wg` on its standard input only.
 */
export function createVpcGateways(deps: {
  dataSource: DataSource;
  secretBox: SecretBox;
  tag: string;
  logger: Logger;
  /** config.host: how clients reach this machine. */
  host: string;
}): VpcGateways {
  const db = deps.dataSource;
  const wireguard = createWireguard({ logger: deps.logger });
  const nsOf = (vpcUuid: string) => routerNamespace(deps.tag, vpcUuid);
  const refOf = (g: Pick<GatewayRow, 'uuid' | 'vpc_uuid'>): WireguardRef => ({
    namespace: nsOf(g.vpc_uuid),
    interfaceName: wireguardInterfaceName(g.uuid),
    socket: 'host',
  });
  const routerExists = (vpcUuid: string) => existsSync(path.join(NETNS_DIR, nsOf(vpcUuid)));

  /** The terminator interface of a kind in the VPC (only WireGuard has one here), or null. */
  function terminatorOf(gateways: GatewayRow[], kind: string): string | null {
    if (kind !== 'wireguard') return null;
    const g = gateways.find((x) => x.kind === kind && x.status !== 'deleting');
    return g ? wireguardInterfaceName(g.uuid) : null;
  }

  /** The routes sent to each device: those installed toward the gateway whose description names it. */
  async function routesBehind(g: GatewayRow): Promise<Map<string, string[]>> {
    const dev = wireguardInterfaceName(g.uuid);
    const installed = new Set(
      (await installedPeerRoutes(nsOf(g.vpc_uuid))).filter((r) => r.dev === dev).map((r) => r.cidr),
    );
    const behind = new Map<string, string[]>();
    for (const r of await livePeerRoutes(db, g.vpc_uuid, 'wireguard')) {
      if (!installed.has(r.cidr)) continue;
      const name = r.description.trim();
      behind.set(name, [...(behind.get(name) ?? []), r.cidr]);
    }
    return behind;
  }

  const peerOf = (d: DeviceRow, behind: Map<string, string[]>): WireguardPeer => {
    const routes = behind.get(d.name) ?? [];
    return { publicKey: d.public_key, address: d.address, ...(routes.length > 0 ? { routes } : {}) };
  };

  /** The WireGuard gateway as the database holds it: interface, key, port, peers; its endpoint recorded. */
  async function ensureWireguard(g: GatewayRow): Promise<void> {
    if (!g.private_key_sealed)
      throw ApplicationFailure.nonRetryable(`gateway ${g.uuid} has no private key`, 'GatewayKeyMissing');
    if (!routerExists(g.vpc_uuid)) throw new Error(`the router of VPC ${g.vpc_uuid} does not exist (yet)`);
    const port = await gatewayPort(db, g.uuid);
    const behind = await routesBehind(g);
    const devices = await devicesOf(db, g.uuid);
    await wireguard
      .ensureGateway({
        ...vpcWireguardGateway({
          gatewayUuid: g.uuid,
          namespace: nsOf(g.vpc_uuid),
          listenPort: port,
          privateKey: deps.secretBox.open(g.private_key_sealed),
          cidrV4: g.cidr_v4,
          users: devices.map((d) => peerOf(d, behind)),
        }),
        socket: 'host',
      })
      .catch((err: Error) => {
        if (!/Address already in use/i.test(err.message)) throw err;
        // the port is the gateway's for good (its endpoint, every device's file names it): it is not moved
        throw new Error(
          `UDP port ${port}, the WireGuard gateway's (its endpoint and every device's configuration name it), is taken by another program on this machine: free it`,
        );
      });
    await setEndpoint(db, g.uuid, gatewayEndpoint(deps.host, port));
  }

  /** Every peer of the gateway allowed its address and the routes behind it now. */
  async function syncPeerRoutes(g: GatewayRow): Promise<void> {
    const behind = await routesBehind(g);
    for (const d of await devicesOf(db, g.uuid)) await wireguard.addPeer(refOf(g), peerOf(d, behind));
  }

  /** The WireGuard interfaces in the router namespace (a previous run's included). */
  async function wireguardLinks(vpcUuid: string): Promise<string[]> {
    if (!routerExists(vpcUuid)) return [];
    const links = JSON.parse(await ip(['-n', nsOf(vpcUuid), '-j', 'link', 'show'])) as Array<{ ifname: string }>;
    return links.map((l) => l.ifname).filter((n) => /^bwg[0-9a-f]{12}$/.test(n));
  }

  async function applyRoutes(vpcUuid: string, routes: RouteSpec[]): Promise<RouteResult[]> {
    const ns = nsOf(vpcUuid);
    const gateways = await gatewaysOf(db, vpcUuid);
    const described = new Map(
      (
        await peerRoutesByUuid(
          db,
          routes.map((r) => r.routeUuid),
        )
      ).map((r): [string, PeerRouteRow] => [r.uuid, r]),
    );
    const wg = gateways.find((g) => g.kind === 'wireguard' && g.status !== 'deleting');
    const deviceNames = new Set(wg ? (await devicesOf(db, wg.uuid)).map((d) => d.name) : []);
    const results: RouteResult[] = [];
    const kept = new Set<string>();
    const before = await installedPeerRoutes(ns);
    for (const r of routes) {
      const dev = terminatorOf(gateways, r.gatewayKind);
      if (!dev) {
        const exists = gateways.some((g) => g.kind === r.gatewayKind && g.status !== 'deleting');
        const reason =
          exists && r.gatewayKind !== 'wireguard'
            ? `no ${r.gatewayKind} terminator in this VPC: ${accessProviderUnreachable(r.gatewayKind)}`
            : `no ${r.gatewayKind} gateway in this VPC`;
        results.push({ routeUuid: r.routeUuid, applied: false, reason });
        continue;
      }
      const carrier = described.get(r.routeUuid)?.description.trim() ?? '';
      if (!deviceNames.has(carrier)) {
        results.push({
          routeUuid: r.routeUuid,
          applied: false,
          reason: `a wireguard peer route goes to the VPN user its description names (the device the range is behind); ${carrier ? `no VPN user is named "${carrier}"` : 'the description is empty'}`,
        });
        continue;
      }
      const refused = await installPeerRoute(ns, r.cidr, dev, before);
      if (refused) results.push({ routeUuid: r.routeUuid, applied: false, reason: refused });
      else {
        results.push({ routeUuid: r.routeUuid, applied: true });
        kept.add(r.cidr);
      }
    }
    for (const installed of await installedPeerRoutes(ns))
      if (!kept.has(installed.cidr)) await withdrawPeerRoute(ns, installed);
    if (wg && (await wireguardLinks(vpcUuid)).includes(wireguardInterfaceName(wg.uuid))) await syncPeerRoutes(wg);
    deps.logger.info(
      {
        vpc: vpcUuid,
        applied: results.filter((r) => r.applied).length,
        failed: results.filter((r) => !r.applied).length,
      },
      'peer routes applied',
    );
    return results;
  }

  async function teardownGateway(ref: WireguardRef): Promise<void> {
    await wireguard.teardown(ref);
  }

  return {
    async enableGateway(spec: GatewaySpec): Promise<void> {
      if (spec.kind !== 'wireguard') throw providerUnreachable(spec.kind);
      const g = await gatewayRow(db, spec.gatewayUuid);
      if (!g) throw ApplicationFailure.nonRetryable(`gateway ${spec.gatewayUuid} does not exist`, 'NotFound');
      await ensureWireguard(g);
    },

    async disableGateway(gatewayUuid: string): Promise<void> {
      const g = await gatewayRow(db, gatewayUuid);
      const interfaceName = wireguardInterfaceName(gatewayUuid);
      if (g) {
        if (g.kind === 'wireguard') await teardownGateway(refOf(g));
        return;
      }
      // the record is gone (a retried call): whatever router still holds the interface
      for (const ns of routerNamespaces(deps.tag))
        await teardownGateway({ namespace: ns, interfaceName, socket: 'host' });
    },

    async addPeer(spec: PeerSpec): Promise<void> {
      const g = await gatewayRow(db, spec.gatewayUuid);
      if (!g || g.kind !== 'wireguard')
        throw ApplicationFailure.nonRetryable(`gateway ${spec.gatewayUuid} is not a WireGuard gateway`, 'NotFound');
      const device = await deviceRow(db, spec.deviceUuid);
      const behind = await routesBehind(g);
      await wireguard.addPeer(refOf(g), {
        publicKey: spec.publicKey,
        address: spec.address,
        ...(device && behind.get(device.name) ? { routes: behind.get(device.name)! } : {}),
      });
    },

    async removePeer(deviceUuid: string): Promise<void> {
      const device = await deviceRow(db, deviceUuid);
      if (!device) return; // its record goes after the peer: nothing left to cut
      const g = await gatewayRow(db, device.gateway_uuid);
      if (!g || !routerExists(g.vpc_uuid)) return;
      if (!(await wireguardLinks(g.vpc_uuid)).includes(wireguardInterfaceName(g.uuid))) return;
      await wireguard.removePeer(refOf(g), device.public_key);
    },

    applyRoutes,

    async createTunnel(_spec: TunnelSpec): Promise<void> {
      throw ApplicationFailure.nonRetryable(LOCAL_NO_SITE_TUNNELS, 'SiteTunnelsUnavailable');
    },

    /** No tunnel is ever made here: nothing to end. */
    async deleteTunnel(_connectionUuid: string): Promise<void> {},

    async rebuild(vpcUuid: string): Promise<void> {
      for (const g of await gatewaysOf(db, vpcUuid))
        if (g.kind === 'wireguard' && g.status === 'active') await ensureWireguard(g);
      await applyRoutes(
        vpcUuid,
        (await appliedPeerRoutes(db, vpcUuid)).map((r) => ({
          routeUuid: r.uuid,
          cidr: r.cidr,
          gatewayKind: r.gateway_kind,
        })),
      );
    },

    async removeAll(vpcUuid: string): Promise<void> {
      const names = new Set(await wireguardLinks(vpcUuid));
      for (const g of await gatewaysOf(db, vpcUuid))
        if (g.kind === 'wireguard') names.add(wireguardInterfaceName(g.uuid));
      for (const interfaceName of names)
        await teardownGateway({ namespace: nsOf(vpcUuid), interfaceName, socket: 'host' });
    },
  };
}
