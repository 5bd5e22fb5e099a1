import { randomUUID } from 'node:crypto';
import { cidr4, formatAddress4, last, overlaps, parseCidr4, type Cidr4 } from '../../domain/vpc';
import { hydrated } from '../../entities/columns';
import { insertReturning, one, updateReturning } from '../../entities/sql';
import { BillableItem, RegionPublicIpv4, VpcSiteConnection, VpcVpnGateway } from '../../entities/vpc';
import type { Caller } from '../context';
import { conflict, notFound, unprocessable } from '../problem';
import { SITE_CONNECTION_SELECT, type SiteConnectionRow } from '../views/vpcs';
import { snapshotOf, type Tx } from './audited-write';
import { assertVpcActive, findVpc } from './vpcs';

/** What one site-to-site connection costs (contract: 199 USD per month). */
const SITE_CONNECTION_MONTHLY_USD = 199;
const MAX_POOL_ADDRESSES = 4096;

/** Adds the region's configured public IPv4 addresses to its pool table (idempotent). */
async function syncPool(tx: Tx, regionId: number, ranges: readonly string[]): Promise<void> {
  const addresses: string[] = [];
  for (const r of ranges) {
    const c = parseCidr4(r.includes('/') ? r : `${r}/32`);
    if (!c) continue;
    for (let n = c.base; n <= last(c) && addresses.length < MAX_POOL_ADDRESSES; n++) addresses.push(formatAddress4(n));
  }
  if (addresses.length === 0) return;
  await tx.m
    .createQueryBuilder()
    .insert()
    .into(RegionPublicIpv4)
    .values(addresses.map((address) => ({ region_id: regionId, address })))
    .orIgnore()
    .execute();
}

/** A connection as the API shows it (its price joined), read in the command's transaction. */
async function connectionRow(tx: Tx, uuid: string): Promise<SiteConnectionRow> {
  return (await one<SiteConnectionRow>(tx.m, `${SITE_CONNECTION_SELECT} WHERE c.uuid = $1`, [uuid]))!;
}

/**
 * POST /vpcs/{uuid}/site_connections (addresses parsed by the route): on an active gateway of
 * an active VPC, remote ranges outside the VPC's, one name per VPC (409); takes a free public
 * IPv4 of the region's pool (422 when none), seals the pre-shared keys, bills 199 USD a month
 * and enqueues its creating workflow.
 */
export async function createSiteConnection(
  tx: Tx,
  caller: Caller,
  input: {
    vpcUuid: string;
    name: string;
    gatewayUuid: string;
    remoteAddress: string;
    remoteCidrs: string[];
    remoteRanges: Cidr4[];
    preSharedKeys: string[];
  },
): Promise<SiteConnectionRow> {
  const { m, deps } = tx;
  const vpc = await findVpc({ caller, deps }, input.vpcUuid, m, true);
  assertVpcActive(vpc);
  const clash = input.remoteCidrs.find((_, i) => overlaps(input.remoteRanges[i]!, cidr4(vpc.cidr_v4)));
  if (clash)
    throw unprocessable(`${clash} overlaps the VPC range ${vpc.cidr_v4}`, [
      { path: 'body.remote_cidrs', message: 'overlaps the VPC range' },
    ]);
  const gateway = await m.findOne(VpcVpnGateway, {
    where: { uuid: input.gatewayUuid, vpc_uuid: vpc.uuid },
    lock: { mode: 'pessimistic_read' },
  });
  if (!gateway)
    throw unprocessable('gateway_uuid is not a VPN gateway of this VPC', [
      { path: 'body.gateway_uuid', message: 'no such gateway' },
    ]);
  if (gateway.status !== 'active')
    throw unprocessable(`the gateway is ${gateway.status}; connections terminate on an active gateway`, [
      { path: 'body.gateway_uuid', message: 'not active' },
    ]);
  if (await m.existsBy(VpcSiteConnection, { vpc_uuid: vpc.uuid, name: input.name }))
    throw conflict(`a site connection named "${input.name}" already exists in this VPC`);
  await syncPool(tx, vpc.region_id, deps.config.publicIpv4Pools[vpc.region_code] ?? []);
  const uuid = randomUUID();
  const sealed = deps.secretBox.seal(JSON.stringify(input.preSharedKeys.map((k) => ({ pre_shared_key: k }))));
  let connection: VpcSiteConnection | undefined;
  // The unique (region, public_ip) index is the allocator: a lost race tries the next free address.
  for (let attempt = 0; attempt < 5 && !connection; attempt++) {
    // Raw: the free address is an anti-join on the pool, read as its host address.
    const free = await one<{ address: string }>(
      m,
      `SELECT host(p.address) AS address FROM region_public_ipv4s p
        WHERE p.region_id = $1 AND NOT EXISTS (SELECT 1 FROM vpc_site_connections s WHERE s.region_id = p.region_id AND s.public_ip = p.address)
        ORDER BY p.address LIMIT 1`,
      [vpc.region_id],
    );
    if (!free)
      throw unprocessable(`region ${vpc.region_code} has no free public IPv4 address for a site-to-site connection`);
    const inserted = await insertReturning(
      m,
      VpcSiteConnection,
      {
        uuid,
        vpc_uuid: vpc.uuid,
        gateway_uuid: gateway.uuid,
        region_id: vpc.region_id,
        name: input.name,
        public_ip: free.address,
        remote_address: input.remoteAddress,
        remote_cidrs: input.remoteCidrs,
        tunnel_count: input.preSharedKeys.length,
        tunnels_sealed: sealed,
      },
      // a name taken in a race must still fail: only the address is forgiven
      { ignoreConflict: 'vpc_site_connections_public_ip' },
    );
    if (inserted) [connection] = hydrated(VpcSiteConnection, [inserted]);
  }
  if (!connection) throw conflict('public addresses are being taken concurrently; retry');
  await insertReturning(m, BillableItem, {
    uuid: randomUUID(),
    workspace_uuid: caller.workspaceUuid,
    resource_type: 'site_connection',
    resource_uuid: uuid,
    description: `site-to-site connection ${input.name} (VPC ${vpc.name})`,
    amount: String(SITE_CONNECTION_MONTHLY_USD),
    currency: 'USD',
    period: 'month',
  });
  await tx.audit({ action: 'site_connection.create', resourceUuid: uuid, before: null, after: snapshotOf(connection) });
  await tx.enqueue({
    operation: 'site-connection-create',
    workflow: 'siteConnectionCreate',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: uuid,
    args: [{ connectionUuid: uuid }],
  });
  return connectionRow(tx, uuid);
}

/**
 * DELETE /vpcs/{uuid}/site_connections/{connection_uuid}: the connection moves to deleting and
 * its deleting workflow is enqueued (its tunnels go down, its address and billing end); 409
 * while pending. Deleting again changes nothing.
 */
export async function deleteSiteConnection(
  tx: Tx,
  caller: Caller,
  input: { vpcUuid: string; connectionUuid: string },
): Promise<SiteConnectionRow> {
  const vpc = await findVpc({ caller, deps: tx.deps }, input.vpcUuid, tx.m, true);
  const found = await tx.m.findOne(VpcSiteConnection, {
    where: { uuid: input.connectionUuid, vpc_uuid: vpc.uuid },
    lock: { mode: 'pessimistic_write' },
  });
  if (!found) throw notFound('site connection');
  const audit = (after: VpcSiteConnection) =>
    tx.audit({
      action: 'site_connection.delete',
      resourceUuid: found.uuid,
      before: snapshotOf(found),
      after: snapshotOf(after),
    });
  if (found.status === 'deleting') {
    await audit(found);
    return connectionRow(tx, found.uuid);
  }
  if (found.status === 'pending')
    throw conflict('the connection is still being set up; delete it once it is active or failed');
  const [updated] = hydrated(VpcSiteConnection, [
    (await updateReturning(tx.m, VpcSiteConnection, found.uuid, { status: 'deleting' }))!,
  ]);
  await tx.enqueue({
    operation: 'site-connection-delete',
    workflow: 'siteConnectionDelete',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: found.uuid,
    args: [{ connectionUuid: found.uuid }],
  });
  await audit(updated!);
  return connectionRow(tx, found.uuid);
}
