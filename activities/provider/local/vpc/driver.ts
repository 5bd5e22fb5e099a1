import { existsSync } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { one, rows } from '../../../../entities/sql';
import type { NetworkDriver } from '../../../../platform/drivers/network';
import { cidr4, routerV4 } from '../../../../domain/vpc';
import { NETNS_DIR } from '../network/namespace';
import { VpcFabric } from './fabric';
import { routerNamespace, vpcKey, vpcRunDir } from './names';
import { ensureResolver, stopResolver } from './resolver';
import { LOCAL_ATTACHABLES_ONLY_APPS } from '../vpcs';
import { ensureRouter, removeRouter, removeRouterNamespace, routerNamespaces } from './router';

/** The gateway side of the VPC driver (VPN gateways and peers, peer routes, site tunnels). */
export type VpcGateways = Pick<
  NetworkDriver,
  'enableGateway' | 'disableGateway' | 'addPeer' | 'removePeer' | 'applyRoutes' | 'createTunnel' | 'deleteTunnel'
> & {
  /** Brings the VPC's gateways, peers, applied routes and tunnels, as the database holds them, into its router. */
  rebuild(vpcUuid: string): Promise<void>;
  /** Stops every gateway of the VPC (its router is about to go). */
  removeAll(vpcUuid: string): Promise<void>;
};

export interface LocalVpcDeps {
  dataSource: DataSource;
  /** The instance's tag (the workload network's): names of routers and files. */
  tag: string;
  logger: Logger;
  gateways: VpcGateways;
  /** Restarts an app that runs with its run spec as the database holds it now (false: it does not run). */
  restartApp(appUuid: string): Promise<boolean>;
}

/** Why an IPv6-only subnet has no workloads on the local driver. */
export const LOCAL_NO_IPV6_SUBNETS =
  'the local driver builds IPv4 subnets; an IPv6-only subnet cannot take workloads here';

/**
 * The LOCAL driver's VPCs, for real on one machine: a router namespace per VPC with its
 * resolver (router.ts, resolver.ts), subnets as bridges, attached apps' replicas plugged
 * into them at every start (fabric.ts, through the launcher), and the gateway side
 * (gateways). Opening it re-adopts what a previous run left: routers of VPCs that still
 * exist are brought to their spec (names of workloads that are gone withdrawn, the resolver
 * and the gateways started again), routers of VPCs that do not are removed.
 */
export async function openLocalVpcs(deps: LocalVpcDeps): Promise<{
  driver: NetworkDriver;
  fabric: VpcFabric;
  close(): Promise<void>;
}> {
  const { dataSource: db, tag, logger, gateways } = deps;
  const reserved = async (vpcUuid: string) => {
    const found = await rows<{ uuid: string; address: string }>(
      db,
      `SELECT uuid, host(address_v4) AS address FROM vpc_attachments WHERE vpc_uuid = $1 AND address_v4 IS NOT NULL`,
      [vpcUuid],
    );
    return new Map(found.map((r) => [r.uuid, r.address]));
  };
  const fabric = new VpcFabric(tag, reserved, logger);
  const resolverOf = (vpcUuid: string, address: string) => ({
    ns: routerNamespace(tag, vpcUuid),
    dir: vpcRunDir(tag, vpcUuid),
    address,
  });

  const removeVpc = async (vpcUuid: string) => {
    await gateways.removeAll(vpcUuid);
    fabric.forgetVpc(vpcUuid);
    await removeRouter(tag, vpcUuid);
  };

  const vpcs = await rows<{ uuid: string; status: string; cidr_v4: string; resolver_v4: string | null }>(
    db,
    `SELECT uuid, status, cidr_v4::text, host(resolver_v4) AS resolver_v4 FROM vpcs`,
  );
  const known = new Map(vpcs.map((v) => [routerNamespace(tag, v.uuid), v]));
  for (const ns of routerNamespaces(tag)) {
    const v = known.get(ns);
    if (v && v.status !== 'deleting') continue;
    // a VPC deleted while Berth was down (or being deleted: its workflow removes it again, idempotently)
    if (v) await removeVpc(v.uuid);
    else await removeRouterNamespace(ns);
  }
  for (const v of vpcs.filter((x) => x.status === 'active' && x.resolver_v4)) {
    try {
      await ensureRouter({ tag, vpcUuid: v.uuid, routerV4: routerV4(cidr4(v.cidr_v4)), resolverV4: v.resolver_v4! });
      fabric.withdrawStaleNames(v.uuid);
      await ensureResolver(resolverOf(v.uuid, v.resolver_v4!));
      await gateways.rebuild(v.uuid);
    } catch (err) {
      logger.error({ vpc: v.uuid, err: (err as Error).message }, 'VPC: could not be brought up again');
    }
  }

  const driver: NetworkDriver = {
    async createVpc(spec) {
      await ensureRouter({ tag, vpcUuid: spec.vpcUuid, routerV4: spec.routerV4, resolverV4: spec.resolverV4 });
    },
    async createRouter(spec) {
      await ensureRouter({ tag, vpcUuid: spec.vpcUuid, routerV4: spec.routerV4, resolverV4: spec.resolverV4 });
    },
    async createResolver(spec) {
      await ensureResolver(resolverOf(spec.vpcUuid, spec.resolverV4));
    },
    async deleteResolver(vpcUuid) {
      if (existsSync(path.join(NETNS_DIR, routerNamespace(tag, vpcUuid)))) await stopResolver(resolverOf(vpcUuid, ''));
    },
    deleteRouter: removeVpc,
    deleteVpc: removeVpc,
    async attach(spec) {
      if (spec.workloadType !== 'App')
        throw ApplicationFailure.nonRetryable(LOCAL_ATTACHABLES_ONLY_APPS, 'NotSupportedByDriver');
      if (!spec.subnetCidrV4) throw ApplicationFailure.nonRetryable(LOCAL_NO_IPV6_SUBNETS, 'NotSupportedByDriver');
      return fabric.serialize(spec.vpcUuid, async () => {
        const held = await one<{ address: string | null }>(
          db,
          `SELECT host(address_v4) AS address FROM vpc_attachments WHERE uuid = $1`,
          [spec.attachmentUuid],
        );
        if (held?.address) return { addressV4: held.address };
        return { addressV4: await fabric.freeAddress(spec.vpcUuid, spec.subnetCidrV4!, spec.attachmentUuid) };
      });
    },
    async detach(attachmentUuid) {
      await fabric.unplugAttachment(attachmentUuid);
    },
    async restartWorkload(requestId, workload, reason) {
      if (workload.workloadType !== 'App') return; // nothing else is ever plugged in (attach refuses it)
      const done = await one(db, `SELECT 1 FROM local_vpc_restarts WHERE request_id = $1`, [requestId]);
      if (done) return;
      const restarted = await deps.restartApp(workload.workloadUuid);
      logger.info({ app: workload.workloadUuid, reason, restarted }, 'VPC: app restarted');
      await db.query(
        `INSERT INTO local_vpc_restarts (request_id, workload_uuid) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
        [requestId, workload.workloadUuid],
      );
    },
    applyRoutes: (vpcUuid, routes) => gateways.applyRoutes(vpcUuid, routes),
    enableGateway: (spec) => gateways.enableGateway(spec),
    disableGateway: (gatewayUuid) => gateways.disableGateway(gatewayUuid),
    addPeer: (spec) => gateways.addPeer(spec),
    removePeer: (deviceUuid) => gateways.removePeer(deviceUuid),
    createTunnel: (spec) => gateways.createTunnel(spec),
    deleteTunnel: (connectionUuid) => gateways.deleteTunnel(connectionUuid),
  };

  return {
    driver,
    fabric,
    /** Berth stops: every router goes with its processes (the next start builds them again). */
    async close() {
      const byKey = new Map(
        (await rows<{ uuid: string }>(db, `SELECT uuid FROM vpcs`).catch(() => [])).map((v) => [
          vpcKey(v.uuid),
          v.uuid,
        ]),
      );
      for (const ns of routerNamespaces(tag)) {
        const uuid = byKey.get(ns.slice(ns.lastIndexOf('-') + 1));
        if (uuid) await removeVpc(uuid).catch(() => {});
        else await removeRouterNamespace(ns);
      }
    },
  };
}
