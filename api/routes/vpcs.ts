import { randomUUID } from 'node:crypto';
import { QueryFailedError, type EntityManager } from 'typeorm';
import * as yup from 'yup';
import {
  DEFAULT_VPC_CIDR,
  defaultSubnet,
  formatCidr4,
  LOCAL_NO_VPC_FABRIC,
  vpcRangeProblems,
  cidr4,
} from '../../domain/vpc';
import { one } from '../../entities/sql';
import { recordAudit, snapshot } from '../audit';
import { selectPage, type Page } from '../pagination';
import { badRequest, conflict, notFound, unprocessable } from '../problem';
import { route, type AnyRouteContext } from '../route';
import { createVpcBody, updateVpcBody } from '../schemas/vpcs';
import { VPC_SELECT, vpcSchema, vpcView, type VpcRow } from '../views/vpcs';

const TAG = 'vpcs';
type Ctx = AnyRouteContext;

/** The VPC, if it belongs to the caller's workspace (404 otherwise). `lock` takes a row lock. */
export async function findVpc(
  ctx: Ctx,
  vpcUuid: string,
  db: EntityManager = ctx.deps.dataSource.manager,
  lock = false,
): Promise<VpcRow> {
  if (lock) await db.query(`SELECT 1 FROM vpcs WHERE uuid = $1 FOR UPDATE`, [vpcUuid]);
  const row = await one<VpcRow>(db, `${VPC_SELECT} WHERE v.uuid = $1 AND v.workspace_uuid = $2`, [
    vpcUuid,
    ctx.caller.workspaceUuid,
  ]);
  if (!row) throw notFound('VPC');
  return row;
}

/** Writes inside a VPC need it active (409 while pending, deleting or failed). */
export function assertVpcActive(vpc: VpcRow): void {
  if (vpc.status !== 'active') throw conflict(`the VPC is ${vpc.status}; this needs an active VPC`);
}

function constraintOf(err: unknown): string | undefined {
  return err instanceof QueryFailedError ? (err.driverError as { constraint?: string }).constraint : undefined;
}

export const vpcRoutes = [
  route<{}, Page, unknown>({
    method: 'get',
    path: '/vpcs',
    requires: 'network.read',
    tag: TAG,
    paginated: true,
    summary: 'List the VPCs of the workspace, newest first',
    response: yup.array(vpcSchema),
    async handler(ctx) {
      const found = await selectPage<VpcRow>(ctx, {
        from: 'vpcs v',
        select: VPC_SELECT,
        where: 'v.workspace_uuid = $1',
        params: [ctx.caller.workspaceUuid],
        order: 'v.created_at DESC, v.uuid DESC',
      });
      return found.map(vpcView);
    },
  }),
  route<{}, {}, yup.InferType<typeof createVpcBody>>({
    method: 'post',
    path: '/vpcs',
    requires: 'vpcs.manage',
    tag: TAG,
    status: 201,
    audit: 'vpc.create',
    body: createVpcBody,
    response: vpcSchema,
    summary:
      'Create a VPC (status pending; a workflow derives its IPv6 range, resolver and VPN pool, then makes it active)',
    async handler(ctx) {
      if (ctx.deps.config.provider === 'local')
        throw unprocessable(LOCAL_NO_VPC_FABRIC, [{ path: 'body', message: 'no VPC fabric on the local driver' }]);
      const name = ctx.body.name ?? 'default';
      const range = ctx.body.cidr_v4 ?? DEFAULT_VPC_CIDR;
      const problems = vpcRangeProblems(range, ctx.deps.config.platformNetworks);
      if (problems.some((p) => p.rule === 'format'))
        throw badRequest(problems[0]!.message, [{ path: 'body.cidr_v4', message: problems[0]!.message }]);
      if (problems.length > 0) {
        throw unprocessable(
          `cidr_v4 is refused: ${problems.map((p) => p.message).join('; ')}`,
          problems.map((p) => ({ path: 'body.cidr_v4', message: p.message })),
        );
      }
      const region = await one<{ id: number }>(ctx.deps.dataSource, `SELECT id FROM regions WHERE id = $1`, [
        ctx.body.region_id,
      ]);
      if (!region)
        throw unprocessable(`region_id ${ctx.body.region_id} is not a region`, [
          { path: 'body.region_id', message: 'no such region' },
        ]);
      const uuid = randomUUID();
      for (let attempt = 0; ; attempt++) {
        try {
          const { vpc, operation } = await ctx.deps.dataSource.transaction(async (m) => {
            const [inserted] = await m.query(
              `INSERT INTO vpcs (uuid, workspace_uuid, region_id, name, label, cidr_v4, is_default)
               VALUES ($1, $2, $3, $4, $5, $6,
                       $7 AND NOT EXISTS (SELECT 1 FROM vpcs WHERE workspace_uuid = $2 AND region_id = $3 AND is_default))
               ON CONFLICT ON CONSTRAINT vpcs_name_per_region DO NOTHING RETURNING uuid`,
              [uuid, ctx.caller.workspaceUuid, region.id, name, ctx.body.label ?? name, range, attempt === 0],
            );
            if (!inserted) throw conflict(`a VPC named "${name}" already exists in this region`);
            await m.query(
              `INSERT INTO vpc_subnets (uuid, vpc_uuid, name, family, cidr_v4, public) VALUES ($1, $2, 'default', 'dual', $3, true)`,
              [randomUUID(), uuid, formatCidr4(defaultSubnet(cidr4(range)))],
            );
            await recordAudit(m, ctx, { resourceUuid: uuid, before: null, after: await snapshot(m, 'vpcs', uuid) });
            const op = await ctx.deps.outbox.enqueue(m, {
              operation: 'vpc-create',
              workflow: 'vpcCreate',
              workspaceUuid: ctx.caller.workspaceUuid,
              resourceUuid: uuid,
              args: [{ vpcUuid: uuid, cidrV4: range }],
            });
            return { vpc: await findVpc(ctx, uuid, m), operation: op };
          });
          await ctx.deps.outbox.dispatch(operation);
          ctx.koa.set('Location', `/api/v1/vpcs/${uuid}`);
          return vpcView(vpc);
        } catch (err) {
          // Two first VPCs of a region raced for default: the loser is simply not the default.
          if (constraintOf(err) === 'vpcs_one_default_per_region' && attempt === 0) continue;
          throw err;
        }
      }
    },
  }),
  route<{ uuid: string }>({
    method: 'get',
    path: '/vpcs/{uuid}',
    requires: 'network.read',
    tag: TAG,
    summary: 'Show a VPC with its subnet and attachment counts',
    response: vpcSchema,
    async handler(ctx) {
      return vpcView(await findVpc(ctx, ctx.params.uuid));
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof updateVpcBody>>({
    method: 'put',
    path: '/vpcs/{uuid}',
    requires: 'vpcs.update',
    tag: TAG,
    audit: 'vpc.update',
    body: updateVpcBody,
    response: vpcSchema,
    summary: "Change a VPC's label or whether it is the region's default (name and ranges are fixed)",
    async handler(ctx) {
      try {
        return await ctx.deps.dataSource.transaction(async (m) => {
          const vpc = await findVpc(ctx, ctx.params.uuid, m, true);
          if (vpc.status === 'deleting') throw conflict('the VPC is being deleted');
          if (ctx.body.is_default === true && !vpc.is_default) {
            const holder = await one<{ name: string }>(
              m,
              `SELECT name FROM vpcs WHERE workspace_uuid = $1 AND region_id = $2 AND is_default AND uuid <> $3`,
              [ctx.caller.workspaceUuid, vpc.region_id, vpc.uuid],
            );
            if (holder) {
              throw unprocessable(`the VPC "${holder.name}" is already the default of this region; unset it first`, [
                { path: 'body.is_default', message: 'another VPC in the region is the default' },
              ]);
            }
          }
          const before = await snapshot(m, 'vpcs', vpc.uuid);
          await m.query(
            `UPDATE vpcs SET label = COALESCE($2, label), is_default = COALESCE($3, is_default), updated_at = now() WHERE uuid = $1`,
            [vpc.uuid, ctx.body.label ?? null, ctx.body.is_default ?? null],
          );
          await recordAudit(m, ctx, { resourceUuid: vpc.uuid, before, after: await snapshot(m, 'vpcs', vpc.uuid) });
          return vpcView(await findVpc(ctx, vpc.uuid, m));
        });
      } catch (err) {
        if (constraintOf(err) === 'vpcs_one_default_per_region') {
          throw unprocessable('another VPC in the region became the default at the same time', [
            { path: 'body.is_default', message: 'another VPC in the region is the default' },
          ]);
        }
        throw err;
      }
    },
  }),
  route<{ uuid: string }>({
    method: 'delete',
    path: '/vpcs/{uuid}',
    requires: 'vpcs.manage',
    tag: TAG,
    status: 202,
    audit: 'vpc.delete',
    response: vpcSchema,
    summary:
      'Delete a VPC: its router and resolver are removed, then the VPC (poll GET until 404); 422 while subnets remain',
    async handler(ctx) {
      const { vpc, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        const found = await findVpc(ctx, ctx.params.uuid, m, true);
        const before = await snapshot(m, 'vpcs', found.uuid);
        if (found.status === 'deleting') {
          await recordAudit(m, ctx, { resourceUuid: found.uuid, before, after: before });
          return { vpc: found, operation: null };
        }
        if (found.status === 'pending')
          throw conflict('the VPC is still being created; delete it once it is active or failed');
        if (found.subnet_count > 0) {
          throw unprocessable(`the VPC still has ${found.subnet_count} subnet(s); delete them first`);
        }
        const [{ n }] = await m.query(`SELECT count(*)::int AS n FROM vpc_site_connections WHERE vpc_uuid = $1`, [
          found.uuid,
        ]);
        if (n > 0)
          throw unprocessable(
            `the VPC still has ${n} site-to-site connection(s), each holding a billed public address; delete them first`,
          );
        await m.query(`UPDATE vpcs SET status = 'deleting', updated_at = now() WHERE uuid = $1`, [found.uuid]);
        const op = await ctx.deps.outbox.enqueue(m, {
          operation: 'vpc-delete',
          workflow: 'vpcDelete',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: found.uuid,
          args: [{ vpcUuid: found.uuid }],
        });
        await recordAudit(m, ctx, { resourceUuid: found.uuid, before, after: await snapshot(m, 'vpcs', found.uuid) });
        return { vpc: await findVpc(ctx, found.uuid, m), operation: op };
      });
      if (operation) await ctx.deps.outbox.dispatch(operation);
      return vpcView(vpc);
    },
  }),
];
