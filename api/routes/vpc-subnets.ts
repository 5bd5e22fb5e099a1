import { QueryFailedError } from 'typeorm';
import * as yup from 'yup';
import { isV6Network } from '../../domain/vpc';
import { one } from '../../entities/sql';
import { write } from '../commands/audited-write';
import { createSubnet, deleteSubnet } from '../commands/vpcs';
import { badRequest, unprocessable } from '../problem';
import { route } from '../route';
import { createSubnetBody } from '../schemas/vpcs';
import { SUBNET_SELECT, subnetSchema, subnetView, type SubnetRow } from '../views/vpcs';
import { vpcChildren } from './vpc-children';

const TAG = 'vpcs';

export const vpcSubnetRoutes = [
  route<{ uuid: string }>({
    method: 'get',
    path: '/vpcs/{uuid}/subnets',
    requires: 'network.read',
    tag: TAG,
    summary: "List a VPC's subnets, newest first",
    response: yup.array(subnetSchema),
    async handler(ctx) {
      const found = await vpcChildren<SubnetRow>(ctx, ctx.params.uuid, SUBNET_SELECT, 's');
      return found.map(subnetView);
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof createSubnetBody>>({
    method: 'post',
    path: '/vpcs/{uuid}/subnets',
    requires: 'vpcs.subnets',
    tag: TAG,
    status: 201,
    audit: 'vpc_subnet.create',
    body: createSubnetBody,
    response: subnetSchema,
    summary:
      "Create a subnet: family dual (default), ipv4 or ipv6; cidr_v6 is derived from the VPC's when omitted; public (default true) keeps the platform default route",
    async handler(ctx) {
      const family = ctx.body.family ?? 'dual';
      const { cidr_v4: v4, cidr_v6: v6Sent } = ctx.body;
      if (family !== 'ipv6' && v4 === undefined)
        throw badRequest('cidr_v4 is required unless family is ipv6', [
          { path: 'body.cidr_v4', message: 'required unless family is ipv6' },
        ]);
      if (family === 'ipv6' && v4 !== undefined)
        throw badRequest('an ipv6 subnet takes no cidr_v4', [
          { path: 'body.cidr_v4', message: 'not allowed for family ipv6' },
        ]);
      if (family === 'ipv4' && v6Sent !== undefined)
        throw badRequest('an ipv4 subnet takes no cidr_v6', [
          { path: 'body.cidr_v6', message: 'not allowed for family ipv4' },
        ]);
      if (v6Sent !== undefined && !isV6Network(v6Sent)) {
        throw badRequest(`${v6Sent} is not an IPv6 network between /48 and /64`, [
          { path: 'body.cidr_v6', message: 'must be an IPv6 network between /48 and /64' },
        ]);
      }
      try {
        return await write(ctx, async (tx) => {
          const subnet = await createSubnet(tx, ctx.caller, { ...ctx.body, family, vpcUuid: ctx.params.uuid });
          ctx.koa.set('Location', `/api/v1/vpcs/${subnet.vpc_uuid}/subnets/${subnet.uuid}`);
          return subnetView((await one<SubnetRow>(tx.m, `${SUBNET_SELECT} WHERE s.uuid = $1`, [subnet.uuid]))!);
        });
      } catch (err) {
        // Concurrent creations the checks above could not see: the exclusion constraints decide.
        const driver =
          err instanceof QueryFailedError ? (err.driverError as { code?: string; constraint?: string }) : undefined;
        if (driver?.code === '23P01') {
          const field = driver.constraint === 'vpc_subnets_no_overlap_v6' ? 'cidr_v6' : 'cidr_v4';
          throw unprocessable(`${field} overlaps another subnet of this VPC`, [
            { path: `body.${field}`, message: 'overlaps another subnet' },
          ]);
        }
        throw err;
      }
    },
  }),
  route<{ uuid: string; subnet_uuid: string }>({
    method: 'delete',
    path: '/vpcs/{uuid}/subnets/{subnet_uuid}',
    requires: 'vpcs.subnets',
    tag: TAG,
    status: 204,
    audit: 'vpc_subnet.delete',
    summary: 'Delete a subnet; 422 while a workload is attached to it',
    async handler(ctx) {
      await write(ctx, (tx) =>
        deleteSubnet(tx, ctx.caller, { vpcUuid: ctx.params.uuid, subnetUuid: ctx.params.subnet_uuid }),
      );
      return undefined;
    },
  }),
];
