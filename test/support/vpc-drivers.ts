import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { localCapabilities } from '../../activities/provider/local/capabilities';
import { instanceTag } from '../../activities/provider/local/network/fabric';
import { openLocalVpcs } from '../../activities/provider/local/vpc/driver';
import { installedPeerRoutes } from '../../activities/provider/local/vpc/peer-routes';
import { routerNamespace, vpcRunDir } from '../../activities/provider/local/vpc/names';
import { resolverPid } from '../../activities/provider/local/vpc/resolver';
import { createVpcGateways } from '../../activities/provider/local/vpc/gateways';
import { localVpcRefusal } from '../../activities/provider/local/vpcs';
import { wireguardInterfaceName } from '../../activities/provider/local/vpn/wireguard-conf';
import type { TestStack } from './stack';

/**
 * The VPC rules proved on each driver that builds VPCs: the simulated one (its tables) and
 * the local one (router namespaces and resolvers in this machine's kernel, where it can
 * build them: root, the workload network's tools, dnsmasq). A suite runs once per driver
 * with `describe.each(VPC_DRIVERS)`; the data-plane checks ask the driver's plane.
 */
export type VpcDriverKind = 'simulated' | 'local';

const localRefusal = localVpcRefusal({ workloadNetwork: 'on' });
if (localRefusal) console.warn(`VPC rules run on the simulated driver only: ${localRefusal}`);
export const VPC_DRIVERS: VpcDriverKind[] = localRefusal ? ['simulated'] : ['simulated', 'local'];

export interface VpcPlane {
  kind: VpcDriverKind;
  /** What of the VPC the data plane holds: its router, and the address its resolver answers at. */
  built(vpcUuid: string): Promise<{ router: boolean; resolver: string | null }>;
  /** The WireGuard peers the VPC's gateway has (device public key and its address). */
  peers(vpcUuid: string, gatewayUuid: string): Promise<Array<{ public_key: string; address: string }>>;
  /** The peer-route ranges the VPC's router holds now, sorted. */
  routes(vpcUuid: string): Promise<string[]>;
  /** The workload restarts the driver was asked for (request id and reason), oldest first. */
  restarts(workloadUuid: string): Promise<Array<{ request_id: string; reason: string }>>;
  close(): Promise<void>;
}

/** Puts the driver under the stack's worker and API (call before `startWorker`). */
export async function useVpcDriver(stack: TestStack, kind: VpcDriverKind): Promise<VpcPlane> {
  if (kind === 'simulated') {
    return {
      kind,
      async built(vpcUuid) {
        const parts = (await stack.ds.query(
          `SELECT component, address FROM sim_network_components WHERE vpc_uuid = $1`,
          [vpcUuid],
        )) as Array<{ component: string; address: string }>;
        return {
          router: parts.some((p) => p.component === 'router'),
          resolver: parts.find((p) => p.component === 'resolver')?.address ?? null,
        };
      },
      peers: (_vpcUuid, gatewayUuid) =>
        stack.ds.query(
          `SELECT public_key, host(address) AS address FROM sim_network_peers WHERE gateway_uuid = $1 ORDER BY address`,
          [gatewayUuid],
        ),
      routes: async (vpcUuid) =>
        (
          (await stack.ds.query(`SELECT cidr::text FROM sim_network_routes WHERE vpc_uuid = $1 ORDER BY cidr`, [
            vpcUuid,
          ])) as Array<{ cidr: string }>
        ).map((r) => r.cidr),
      restarts: (workloadUuid) =>
        stack.ds.query(
          `SELECT request_id, reason FROM sim_network_restarts WHERE workload_uuid = $1 ORDER BY created_at`,
          [workloadUuid],
        ),
      close: async () => {},
    };
  }
  const tag = instanceTag(mkdtempSync(path.join(tmpdir(), 'berth-vpc-rules-')));
  const restarts: Array<{ workloadUuid: string; request_id: string; reason: string }> = [];
  const logger = pino({ level: 'silent' });
  const vpcs = await openLocalVpcs({
    dataSource: stack.ds,
    tag,
    logger,
    gateways: createVpcGateways({ dataSource: stack.ds, secretBox: stack.secretBox, tag, logger, host: '127.0.0.1' }),
    restartApp: async () => true,
  });
  // the driver's own restart bookkeeping, seen through a wrapper that records what it carries out
  const restart = vpcs.driver.restartWorkload;
  vpcs.driver.restartWorkload = async (requestId, workload, reason) => {
    const before = (await stack.ds.query(`SELECT 1 FROM local_vpc_restarts WHERE request_id = $1`, [requestId])).length;
    await restart(requestId, workload, reason);
    if (before === 0) restarts.push({ workloadUuid: workload.workloadUuid, request_id: requestId, reason });
  };
  Object.assign(stack.activityDeps.provider, { network: vpcs.driver });
  const local = localCapabilities({ valkeyServer: undefined, mysqlServer: undefined, workloadNetwork: 'on' });
  stack.apiDeps.capabilities = {
    ...stack.apiDeps.capabilities!,
    vpcs: local.vpcs,
    vpcAttachable: local.vpcAttachable,
    siteConnections: local.siteConnections,
  };
  return {
    kind,
    async built(vpcUuid) {
      const ns = routerNamespace(tag, vpcUuid);
      const router = existsSync(`/run/netns/${ns}`);
      const pid = router ? await resolverPid({ ns, dir: vpcRunDir(tag, vpcUuid), address: '' }) : null;
      const listen = pid
        ? /--listen-address=([\d.]+)/.exec(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' '))
        : null;
      return { router, resolver: listen?.[1] ?? null };
    },
    async peers(vpcUuid, gatewayUuid) {
      const ns = routerNamespace(tag, vpcUuid);
      if (!existsSync(`/run/netns/${ns}`)) return [];
      let out: string;
      try {
        out = execFileSync(
          'ip',
          ['netns', 'exec', ns, 'wg', 'show', wireguardInterfaceName(gatewayUuid), 'allowed-ips'],
          {
            encoding: 'utf8',
            stdio: ['ignore', 'pipe', 'ignore'],
          },
        );
      } catch {
        return []; // no such interface: the gateway is off
      }
      return out
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => {
          const [publicKey, ...ranges] = line.split(/\s+/);
          return { public_key: publicKey!, address: ranges[0]!.replace(/\/32$/, '') };
        })
        .sort((a, b) => a.address.localeCompare(b.address));
    },
    routes: async (vpcUuid) => {
      const ns = routerNamespace(tag, vpcUuid);
      return existsSync(`/run/netns/${ns}`) ? (await installedPeerRoutes(ns)).map((r) => r.cidr).sort() : [];
    },
    restarts: async (workloadUuid) =>
      restarts.filter((r) => r.workloadUuid === workloadUuid).map(({ request_id, reason }) => ({ request_id, reason })),
    close: () => vpcs.close(),
  };
}
