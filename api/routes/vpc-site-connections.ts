import { randomUUID } from 'node:crypto';
import * as yup from 'yup';
import { cidr4, formatAddress4, isNetworkAddress, last, overlaps, parseCidr4 } from '../../domain/vpc';
import { one, type Db } from '../../entities/sql';
import { recordAudit, snapshot } from '../audit';
import { badRequest, conflict, notFound, unprocessable } from '../problem';
import { route } from '../route';
import { createSiteConnectionBody } from '../schemas/vpcs';
import {
  SITE_CONNECTION_SELECT,
  siteConnectionSchema,
  siteConnectionView,
  type SiteConnectionRow,
} from '../views/vpcs';
import { assertVpcActive, findVpc } from '../commands/vpcs';
import { vpcChildren } from './vpc-children';

const TAG = 'vpcs';
/** What one site-to-site connection costs (contract: 199 USD per month). */
export const SITE_CONNECTION_MONTHLY_USD = 199;
const MAX_POOL_ADDRESSES = 4096;

/** Adds the region's configured public IPv4 addresses to its pool table (idempotent). */
async function syncPool(db: Db, regionId: number, ranges: readonly string[]): Promise<void> {
  const addresses: string[] = [];
  for (const r of ranges) {
    const c = parseCidr4(r.includes('/') ? r : `${r}/32`);
    if (!c) continue;
    for (let n = c.base; n <= last(c) && addresses.length < MAX_POOL_ADDRESSES; n++) addresses.push(formatAddress4(n));
  }
  if (addresses.length === 0) return;
  await db.query(
    `INSERT INTO region_public_ipv4s (region_id, address) SELECT $1, unnest($2::inet[]) ON CONFLICT DO NOTHING`,
    [regionId, addresses],
  );
}

export const vpcSiteConnectionRoutes = [
  route<{ uuid: string }>({
    method: 'get',
    path: '/vpcs/{uuid}/site_connections',
    requires: 'network.read',
    tag: TAG,
    summary: "List a VPC's site-to-site connections (pre-shared keys are never returned)",
    response: yup.array(siteConnectionSchema),
    async handler(ctx) {
      const found = await vpcChildren<SiteConnectionRow>(ctx, ctx.params.uuid, SITE_CONNECTION_SELECT, 'c');
      return found.map(siteConnectionView);
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof createSiteConnectionBody>>({
    method: 'post',
    path: '/vpcs/{uuid}/site_connections',
    requires: 'vpcs.site_connections',
    tag: TAG,
    status: 201,
    audit: 'site_connection.create',
    body: createSiteConnectionBody,
    response: siteConnectionSchema,
    summary:
      'Connect a remote network over IPsec: takes one public IPv4 of the region (public_ip, for the far side; 422 when none is free), 199 USD per month',
    async handler(ctx) {
      const remote = parseCidr4(`${ctx.body.remote_address}/32`);
      if (!remote)
        throw badRequest('remote_address is not an IPv4 address', [
          { path: 'body.remote_address', message: 'not an IPv4 address' },
        ]);
      const remoteRanges = ctx.body.remote_cidrs.map((text, i) => {
        const c = parseCidr4(text);
        if (!c)
          throw badRequest(`${text} is not an IPv4 range`, [
            { path: `body.remote_cidrs[${i}]`, message: 'not an IPv4 range' },
          ]);
        if (!isNetworkAddress(c))
          throw unprocessable(`${text} has host bits set`, [
            { path: `body.remote_cidrs[${i}]`, message: 'host bits set' },
          ]);
        return c;
      });
      const { connection, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        const vpc = await findVpc(ctx, ctx.params.uuid, m, true);
        assertVpcActive(vpc);
        const clash = ctx.body.remote_cidrs.find((_, i) => overlaps(remoteRanges[i]!, cidr4(vpc.cidr_v4)));
        if (clash)
          throw unprocessable(`${clash} overlaps the VPC range ${vpc.cidr_v4}`, [
            { path: 'body.remote_cidrs', message: 'overlaps the VPC range' },
          ]);
        const gateway = await one<{ uuid: string; status: string }>(
          m,
          `SELECT uuid, status FROM vpc_vpn_gateways WHERE uuid = $1 AND vpc_uuid = $2 FOR SHARE`,
          [ctx.body.gateway_uuid, vpc.uuid],
        );
        if (!gateway)
          throw unprocessable('gateway_uuid is not a VPN gateway of this VPC', [
            { path: 'body.gateway_uuid', message: 'no such gateway' },
          ]);
        if (gateway.status !== 'active')
          throw unprocessable(`the gateway is ${gateway.status}; connections terminate on an active gateway`, [
            { path: 'body.gateway_uuid', message: 'not active' },
          ]);
        if (
          await one(m, `SELECT 1 FROM vpc_site_connections WHERE vpc_uuid = $1 AND name = $2`, [
            vpc.uuid,
            ctx.body.name,
          ])
        ) {
          throw conflict(`a site connection named "${ctx.body.name}" already exists in this VPC`);
        }
        await syncPool(m, vpc.region_id, ctx.deps.config.publicIpv4Pools[vpc.region_code] ?? []);
        const uuid = randomUUID();
        const sealed = ctx.deps.secretBox.seal(
          JSON.stringify(ctx.body.tunnels.map((t) => ({ pre_shared_key: t.pre_shared_key }))),
        );
        let inserted = false;
        // The unique (region, public_ip) index is the allocator: a lost race tries the next free address.
        for (let attempt = 0; attempt < 5 && !inserted; attempt++) {
          const free = await one<{ address: string }>(
            m,
            `SELECT host(p.address) AS address FROM region_public_ipv4s p
              WHERE p.region_id = $1 AND NOT EXISTS (SELECT 1 FROM vpc_site_connections s WHERE s.region_id = p.region_id AND s.public_ip = p.address)
              ORDER BY p.address LIMIT 1`,
            [vpc.region_id],
          );
          if (!free)
            throw unprocessable(
              `region ${vpc.region_code} has no free public IPv4 address for a site-to-site connection`,
            );
          const [row] = await m.query(
            `INSERT INTO vpc_site_connections (uuid, vpc_uuid, gateway_uuid, region_id, name, public_ip, remote_address, remote_cidrs, tunnel_count, tunnels_sealed)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8::cidr[], $9, $10)
             ON CONFLICT ON CONSTRAINT vpc_site_connections_public_ip DO NOTHING RETURNING uuid`,
            [
              uuid,
              vpc.uuid,
              gateway.uuid,
              vpc.region_id,
              ctx.body.name,
              free.address,
              ctx.body.remote_address,
              ctx.body.remote_cidrs,
              ctx.body.tunnels.length,
              sealed,
            ],
          );
          inserted = Boolean(row);
        }
        if (!inserted) throw conflict('public addresses are being taken concurrently; retry');
        await m.query(
          `INSERT INTO billable_items (uuid, workspace_uuid, resource_type, resource_uuid, description, amount, currency, period)
           VALUES ($1, $2, 'site_connection', $3, $4, $5, 'USD', 'month')`,
          [
            randomUUID(),
            ctx.caller.workspaceUuid,
            uuid,
            `site-to-site connection ${ctx.body.name} (VPC ${vpc.name})`,
            SITE_CONNECTION_MONTHLY_USD,
          ],
        );
        await recordAudit(m, ctx, {
          resourceUuid: uuid,
          before: null,
          after: await snapshot(m, 'vpc_site_connections', uuid),
        });
        const op = await ctx.deps.outbox.enqueue(m, {
          operation: 'site-connection-create',
          workflow: 'siteConnectionCreate',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: uuid,
          args: [{ connectionUuid: uuid }],
        });
        return {
          connection: (await one<SiteConnectionRow>(m, `${SITE_CONNECTION_SELECT} WHERE c.uuid = $1`, [uuid]))!,
          operation: op,
        };
      });
      await ctx.deps.outbox.dispatch(operation);
      ctx.koa.set('Location', `/api/v1/vpcs/${connection.vpc_uuid}/site_connections/${connection.uuid}`);
      return siteConnectionView(connection);
    },
  }),
  route<{ uuid: string; connection_uuid: string }>({
    method: 'delete',
    path: '/vpcs/{uuid}/site_connections/{connection_uuid}',
    requires: 'vpcs.site_connections',
    tag: TAG,
    status: 202,
    audit: 'site_connection.delete',
    response: siteConnectionSchema,
    summary:
      'Delete a site-to-site connection: its tunnels go down, its public IPv4 returns to the pool and its billing ends',
    async handler(ctx) {
      const { connection, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        const vpc = await findVpc(ctx, ctx.params.uuid, m, true);
        const found = await one<SiteConnectionRow>(
          m,
          `${SITE_CONNECTION_SELECT} WHERE c.uuid = $1 AND c.vpc_uuid = $2`,
          [ctx.params.connection_uuid, vpc.uuid],
        );
        if (!found) throw notFound('site connection');
        const before = await snapshot(m, 'vpc_site_connections', found.uuid);
        if (found.status === 'deleting') {
          await recordAudit(m, ctx, { resourceUuid: found.uuid, before, after: before });
          return { connection: found, operation: null };
        }
        if (found.status === 'pending')
          throw conflict('the connection is still being set up; delete it once it is active or failed');
        await m.query(`UPDATE vpc_site_connections SET status = 'deleting', updated_at = now() WHERE uuid = $1`, [
          found.uuid,
        ]);
        const op = await ctx.deps.outbox.enqueue(m, {
          operation: 'site-connection-delete',
          workflow: 'siteConnectionDelete',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: found.uuid,
          args: [{ connectionUuid: found.uuid }],
        });
        await recordAudit(m, ctx, {
          resourceUuid: found.uuid,
          before,
          after: await snapshot(m, 'vpc_site_connections', found.uuid),
        });
        return { connection: { ...found, status: 'deleting' as const }, operation: op };
      });
      if (operation) await ctx.deps.outbox.dispatch(operation);
      return siteConnectionView(connection);
    },
  }),
];
