import * as yup from 'yup';
import { DEFAULT_VPC_CIDR, vpcRangeProblems } from '../../domain/vpc';
import { one } from '../../entities/sql';
import { write } from '../commands/audited-write';
import { constraintOf, createVpc, deleteVpc, findVpc, refuseCidr4, updateVpc } from '../commands/vpcs';
import { selectPage, type Page } from '../pagination';
import { unprocessable } from '../problem';
import { route } from '../route';
import { createVpcBody, updateVpcBody } from '../schemas/vpcs';
import { VPC_SELECT, vpcSchema, vpcView, type VpcRow } from '../views/vpcs';

const TAG = 'vpcs';

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
      const refusal = ctx.deps.capabilities?.vpcs ?? null;
      if (refusal) throw unprocessable(refusal, [{ path: 'body', message: 'the data-plane driver builds no VPCs' }]);
      const name = ctx.body.name ?? 'default';
      const range = ctx.body.cidr_v4 ?? DEFAULT_VPC_CIDR;
      const problems = vpcRangeProblems(range, ctx.deps.config.platformNetworks);
      refuseCidr4(problems);
      const region = await one<{ id: number }>(ctx.deps.dataSource, `SELECT id FROM regions WHERE id = $1`, [
        ctx.body.region_id,
      ]);
      if (!region)
        throw unprocessable(`region_id ${ctx.body.region_id} is not a region`, [
          { path: 'body.region_id', message: 'no such region' },
        ]);
      for (let attempt = 0; ; attempt++) {
        try {
          const vpc = await write(ctx, async (tx) => {
            const created = await createVpc(tx, ctx.caller, {
              regionId: region.id,
              name,
              label: ctx.body.label ?? name,
              cidrV4: range,
              mayBeDefault: attempt === 0,
            });
            return findVpc(ctx, created.uuid, tx.m);
          });
          ctx.koa.set('Location', `/api/v1/vpcs/${vpc.uuid}`);
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
        return await write(ctx, async (tx) => {
          await updateVpc(tx, ctx.caller, { ...ctx.body, uuid: ctx.params.uuid });
          return vpcView(await findVpc(ctx, ctx.params.uuid, tx.m));
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
    handler: (ctx) =>
      write(ctx, async (tx) => {
        await deleteVpc(tx, ctx.caller, { uuid: ctx.params.uuid });
        return vpcView(await findVpc(ctx, ctx.params.uuid, tx.m));
      }),
  }),
];
