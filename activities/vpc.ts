import { ApplicationFailure } from '@temporalio/common';
import { cidr4, subnetV6Of, type VpcAddressing } from '../domain/vpc';
import { one, rows, type Db } from '../entities/sql';
import type { ActivityDeps } from './deps';
import { moveState } from './state';
import type { NetworkDriver, RouteResult, VpcSpec } from '../platform/drivers/network';

interface VpcRow {
  uuid: string;
  cidr_v4: string;
  status: string;
}

interface AttachmentRow {
  uuid: string;
  vpc_uuid: string;
  attachable_type: string;
  attachable_uuid: string;
  status: string;
  fqdn: string | null;
  subnet_v4: string | null;
  subnet_v6: string | null;
  public: boolean;
}

const ATTACHMENT_SELECT = `SELECT a.uuid, a.vpc_uuid, a.attachable_type, a.attachable_uuid, a.status, a.fqdn,
         s.cidr_v4::text AS subnet_v4, s.cidr_v6::text AS subnet_v6, s.public
    FROM vpc_attachments a JOIN vpc_subnets s ON s.uuid = a.subnet_uuid`;

/**
 * Plugs the attachment's workload into its subnet through the driver and records the pod
 * address. Idempotent: the driver keys the attachment by its uuid, so a second call (a
 * retried activity) answers the address it already gave and plugs nothing more.
 */
async function plugIn(db: Db, network: NetworkDriver, a: AttachmentRow): Promise<void> {
  const { addressV4 } = await network.attach({
    attachmentUuid: a.uuid,
    vpcUuid: a.vpc_uuid,
    workloadType: a.attachable_type,
    workloadUuid: a.attachable_uuid,
    subnetCidrV4: a.subnet_v4,
    subnetCidrV6: a.subnet_v6,
    defaultRoute: a.public ? 'platform' : 'vpc',
    fqdn: a.fqdn,
  });
  await db.query(`UPDATE vpc_attachments SET address_v4 = $2, updated_at = now() WHERE uuid = $1`, [a.uuid, addressV4]);
}

/**
 * For an app's provisioning: plugs the app into every VPC it is recorded `attached` to
 * (an app that joined a VPC at creation, POST /apps vpc_uuid / vpc_subnet_uuid, starts
 * inside it, so no restart). Attachments still `attaching` belong to their vpcAttach
 * workflow; one that is detaching is left alone. Idempotent, like plugIn.
 */
export async function plugInAppNetworks(db: Db, network: NetworkDriver, appUuid: string): Promise<number> {
  const found = await rows<AttachmentRow>(
    db,
    `${ATTACHMENT_SELECT} WHERE a.attachable_type = 'App' AND a.attachable_uuid = $1 AND a.status = 'attached' ORDER BY a.created_at`,
    [appUuid],
  );
  for (const a of found) await plugIn(db, network, a);
  return found.length;
}

/**
 * Activities of the VPC workflows: provisioning and removal through the network driver,
 * attachments (each attach and detach restarts the workload once), peer-route applies.
 * Every state move is guarded; every driver call is idempotent.
 */
export function createVpcActivities({
  dataSource,
  provider,
  logger,
}: Pick<ActivityDeps, 'dataSource' | 'provider' | 'logger'>) {
  const network = provider.network;

  async function vpc(vpcUuid: string): Promise<VpcRow> {
    const row = await one<VpcRow>(dataSource, `SELECT uuid, cidr_v4::text, status FROM vpcs WHERE uuid = $1`, [
      vpcUuid,
    ]);
    if (!row) throw ApplicationFailure.nonRetryable(`VPC ${vpcUuid} does not exist`, 'NotFound');
    return row;
  }

  async function attachment(attachmentUuid: string): Promise<AttachmentRow> {
    const row = await one<AttachmentRow>(dataSource, `${ATTACHMENT_SELECT} WHERE a.uuid = $1`, [attachmentUuid]);
    if (!row) throw ApplicationFailure.nonRetryable(`attachment ${attachmentUuid} does not exist`, 'NotFound');
    return row;
  }

  return {
    /** Creates the VPC, its router and its resolver in the data plane. */
    async provisionVpcNetwork(vpcUuid: string, addressing: VpcAddressing): Promise<void> {
      const row = await vpc(vpcUuid);
      const spec: VpcSpec = {
        vpcUuid,
        cidrV4: row.cidr_v4,
        cidrV6: addressing.cidrV6,
        routerV4: addressing.routerV4,
        resolverV4: addressing.resolverV4,
      };
      await network.createVpc(spec);
      await network.createRouter(spec);
      await network.createResolver(spec);
    },

    /** pending -> active with the derived addresses; dual-stack subnets get their /64. */
    async activateVpc(vpcUuid: string, addressing: VpcAddressing): Promise<boolean> {
      return dataSource.transaction(async (m) => {
        const activated = await moveState(
          m,
          { table: 'vpcs', uuid: vpcUuid, from: ['pending'], to: 'active' },
          { cidr_v6: addressing.cidrV6, resolver_v4: addressing.resolverV4, vpn_pool_v4: addressing.vpnPoolV4 },
        );
        if (!activated) return false;
        const moved = (await one<VpcRow>(m, `SELECT uuid, cidr_v4::text, status FROM vpcs WHERE uuid = $1`, [
          vpcUuid,
        ]))!;
        const subnets = await rows<{ uuid: string; cidr_v4: string }>(
          m,
          `SELECT uuid, cidr_v4::text FROM vpc_subnets WHERE vpc_uuid = $1 AND family = 'dual' AND cidr_v6 IS NULL`,
          [vpcUuid],
        );
        for (const s of subnets) {
          await m.query(`UPDATE vpc_subnets SET cidr_v6 = $2, updated_at = now() WHERE uuid = $1`, [
            s.uuid,
            subnetV6Of(addressing.cidrV6, cidr4(moved.cidr_v4), cidr4(s.cidr_v4)),
          ]);
        }
        return true;
      });
    },

    async failVpc(vpcUuid: string, reason: string): Promise<boolean> {
      return moveState(
        dataSource,
        { table: 'vpcs', uuid: vpcUuid, from: ['pending'], to: 'failed' },
        { failure_reason: reason.slice(0, 500) },
      );
    },

    /** Removes resolver, router and VPC from the data plane (compensation and deletion). */
    async removeVpcNetwork(vpcUuid: string): Promise<void> {
      await network.deleteResolver(vpcUuid);
      await network.deleteRouter(vpcUuid);
      await network.deleteVpc(vpcUuid);
    },

    /** Deletes a VPC that is being deleted (gateways, users and routes go with it). */
    async deleteVpcRecord(vpcUuid: string): Promise<boolean> {
      const deleted = await rows(
        dataSource,
        `DELETE FROM vpcs WHERE uuid = $1 AND status = 'deleting' RETURNING uuid`,
        [vpcUuid],
      );
      return deleted.length > 0;
    },

    /** Plugs the workload into its subnet; records the pod address. */
    async attachWorkloadNetwork(attachmentUuid: string): Promise<void> {
      const a = await attachment(attachmentUuid);
      if (a.status !== 'attaching' && a.status !== 'attached') return;
      await plugIn(dataSource, network, a);
    },

    async detachWorkloadNetwork(attachmentUuid: string): Promise<void> {
      await network.detach(attachmentUuid);
    },

    /** Restarts the attached workload once for this attach or detach. */
    async restartAttachedWorkload(attachmentUuid: string, reason: 'attach' | 'detach'): Promise<void> {
      const a = await attachment(attachmentUuid);
      await network.restartWorkload(
        `${reason}/${attachmentUuid}`,
        { workloadType: a.attachable_type, workloadUuid: a.attachable_uuid },
        `vpc ${reason}`,
      );
    },

    async failAttachment(attachmentUuid: string, reason: string): Promise<boolean> {
      return moveState(
        dataSource,
        { table: 'vpc_attachments', uuid: attachmentUuid, from: ['attaching'], to: 'failed' },
        { failure_reason: reason.slice(0, 500) },
      );
    },

    /**
     * A workload that is being deleted leaves every VPC it is attached to: unplugged from
     * the data plane and its attachments removed, with no restart. Idempotent.
     */
    async detachDeletedWorkload(workloadUuid: string): Promise<number> {
      const found = await rows<{ uuid: string }>(
        dataSource,
        `UPDATE vpc_attachments SET status = 'detaching', updated_at = now() WHERE attachable_uuid = $1 RETURNING uuid`,
        [workloadUuid],
      );
      for (const a of found) {
        await network.detach(a.uuid);
        await dataSource.query(`DELETE FROM vpc_attachments WHERE uuid = $1`, [a.uuid]);
      }
      return found.length;
    },

    async deleteAttachmentRecord(attachmentUuid: string): Promise<boolean> {
      const deleted = await rows(
        dataSource,
        `DELETE FROM vpc_attachments WHERE uuid = $1 AND status = 'detaching' RETURNING uuid`,
        [attachmentUuid],
      );
      return deleted.length > 0;
    },

    /**
     * Installs the VPC's route table: every applied route plus the routes this apply
     * claimed, less the removals it claimed. Answers each claimed route's outcome.
     */
    async applyPeerRoutes(vpcUuid: string, applyUuid: string): Promise<RouteResult[]> {
      const desired = await rows<{ uuid: string; cidr: string; gateway_kind: string; claimed: boolean }>(
        dataSource,
        `SELECT uuid, cidr::text, gateway_kind, apply_uuid IS NOT DISTINCT FROM $2 AS claimed FROM vpc_peer_routes
          WHERE vpc_uuid = $1 AND removed_at IS NULL AND (status = 'applied' OR apply_uuid = $2) ORDER BY created_at`,
        [vpcUuid, applyUuid],
      );
      const results = await network.applyRoutes(
        vpcUuid,
        desired.map((r) => ({ routeUuid: r.uuid, cidr: r.cidr, gatewayKind: r.gateway_kind })),
      );
      const claimed = new Set(desired.filter((r) => r.claimed).map((r) => r.uuid));
      return results.filter((r) => claimed.has(r.routeUuid));
    },

    /** Attachments of the VPC whose workloads an apply restarts. */
    async listAttachedWorkloads(vpcUuid: string): Promise<string[]> {
      const found = await rows<{ uuid: string }>(
        dataSource,
        `SELECT uuid FROM vpc_attachments WHERE vpc_uuid = $1 AND status = 'attached' ORDER BY created_at`,
        [vpcUuid],
      );
      return found.map((r) => r.uuid);
    },

    async restartForPeerRoutes(attachmentUuid: string, applyUuid: string): Promise<void> {
      const a = await attachment(attachmentUuid);
      await network.restartWorkload(
        `peer-routes/${applyUuid}/${attachmentUuid}`,
        { workloadType: a.attachable_type, workloadUuid: a.attachable_uuid },
        'peer routes applied',
      );
    },

    /** Moves the apply's staged routes to applied or failed and drops its claimed removals. */
    async recordPeerRouteResults(
      applyUuid: string,
      results: RouteResult[],
      failAllReason: string | null,
    ): Promise<{ applied: number; failed: number }> {
      return dataSource.transaction(async (m) => {
        let applied = 0;
        let failed = 0;
        const staged = await rows<{ uuid: string }>(
          m,
          `SELECT uuid FROM vpc_peer_routes WHERE apply_uuid = $1 AND removed_at IS NULL AND status = 'pending'`,
          [applyUuid],
        );
        for (const { uuid } of staged) {
          const result = results.find((r) => r.routeUuid === uuid);
          const ok = failAllReason === null && result?.applied === true;
          await m.query(
            `UPDATE vpc_peer_routes SET status = $2, failure_reason = $3, updated_at = now() WHERE uuid = $1 AND status = 'pending'`,
            [uuid, ok ? 'applied' : 'failed', ok ? null : (failAllReason ?? result?.reason ?? 'not applied')],
          );
          if (ok) applied++;
          else failed++;
        }
        if (failAllReason === null) {
          await m.query(`DELETE FROM vpc_peer_routes WHERE apply_uuid = $1 AND removed_at IS NOT NULL`, [applyUuid]);
        } else {
          // The removal did not reach the router: stage it again for the next apply.
          await m.query(
            `UPDATE vpc_peer_routes SET apply_uuid = NULL WHERE apply_uuid = $1 AND removed_at IS NOT NULL`,
            [applyUuid],
          );
        }
        logger.info({ applyUuid, applied, failed }, 'peer routes applied');
        return { applied, failed };
      });
    },
  };
}
