import { randomUUID } from 'node:crypto';
import { QueryFailedError } from 'typeorm';
import * as yup from 'yup';
import { cidr4, isV6Network, subnetProblems, subnetV6ById, subnetV6Of, v6Overlaps, v6Within } from '../../domain/vpc';
import { one, rows } from '../../entities/sql';
import { recordAudit, snapshot } from '../audit';
import { badRequest, conflict, notFound, unprocessable } from '../problem';
import { route } from '../route';
import { createSubnetBody } from '../schemas/vpcs';
import { SUBNET_SELECT, subnetSchema, subnetView, type SubnetRow } from '../views/vpcs';
import { assertVpcActive, findVpc } from './vpcs';

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
      const vpc = await findVpc(ctx, ctx.params.uuid);
      const found = await rows<SubnetRow>(
        ctx.deps.dataSource,
        `${SUBNET_SELECT} WHERE s.vpc_uuid = $1 ORDER BY s.created_at DESC, s.uuid DESC`,
        [vpc.uuid],
      );
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
        return await ctx.deps.dataSource.transaction(async (m) => {
          const vpc = await findVpc(ctx, ctx.params.uuid, m, true);
          assertVpcActive(vpc);
          const siblings = await rows<{ cidr_v4: string | null; cidr_v6: string | null }>(
            m,
            `SELECT cidr_v4::text, cidr_v6::text FROM vpc_subnets WHERE vpc_uuid = $1`,
            [vpc.uuid],
          );
          if (v4 !== undefined) {
            const problems = subnetProblems(
              vpc.cidr_v4,
              v4,
              siblings.flatMap((s) => (s.cidr_v4 ? [s.cidr_v4] : [])),
            );
            if (problems.some((p) => p.rule === 'format'))
              throw badRequest(problems[0]!.message, [{ path: 'body.cidr_v4', message: problems[0]!.message }]);
            if (problems.length > 0) {
              throw unprocessable(
                `cidr_v4 is refused: ${problems.map((p) => p.message).join('; ')}`,
                problems.map((p) => ({ path: 'body.cidr_v4', message: p.message })),
              );
            }
          }
          let v6: string | null = null;
          if (family !== 'ipv4') {
            const vpcV6 = vpc.cidr_v6!;
            if (v6Sent !== undefined) {
              if (!v6Within(vpcV6, v6Sent))
                throw unprocessable(`cidr_v6 ${v6Sent} is not inside the VPC range ${vpcV6}`, [
                  { path: 'body.cidr_v6', message: `not inside ${vpcV6}` },
                ]);
              v6 = v6Sent;
            } else if (v4 !== undefined) {
              v6 = subnetV6Of(vpcV6, cidr4(vpc.cidr_v4), cidr4(v4));
            } else {
              // An IPv6-only subnet: the highest /64 of the VPC no sibling uses.
              for (let id = 0xffff; id >= 0 && v6 === null; id--) {
                const candidate = subnetV6ById(vpcV6, id);
                if (!siblings.some((s) => s.cidr_v6 && v6Overlaps(s.cidr_v6, candidate))) v6 = candidate;
              }
            }
            const clash = siblings.find((s) => s.cidr_v6 && v6 && v6Overlaps(s.cidr_v6, v6));
            if (clash) {
              throw unprocessable(
                `cidr_v6 ${v6} overlaps the subnet ${clash.cidr_v6}${v6Sent === undefined ? '; send cidr_v6 explicitly' : ''}`,
                [{ path: 'body.cidr_v6', message: `overlaps ${clash.cidr_v6}` }],
              );
            }
          }
          const name = ctx.body.name ?? (v4 ? v4.replace(/[./]/g, '-') : `ipv6-${v6!.split(':')[3] || '0'}`);
          const uuid = randomUUID();
          const [inserted] = await m.query(
            `INSERT INTO vpc_subnets (uuid, vpc_uuid, name, family, cidr_v4, cidr_v6, public) VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT ON CONSTRAINT vpc_subnets_name DO NOTHING RETURNING uuid`,
            [uuid, vpc.uuid, name, family, v4 ?? null, v6, ctx.body.public ?? true],
          );
          if (!inserted) throw conflict(`a subnet named "${name}" already exists in this VPC`);
          await recordAudit(m, ctx, {
            resourceUuid: uuid,
            before: null,
            after: await snapshot(m, 'vpc_subnets', uuid),
          });
          ctx.koa.set('Location', `/api/v1/vpcs/${vpc.uuid}/subnets/${uuid}`);
          return subnetView((await one<SubnetRow>(m, `${SUBNET_SELECT} WHERE s.uuid = $1`, [uuid]))!);
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
      await ctx.deps.dataSource.transaction(async (m) => {
        const vpc = await findVpc(ctx, ctx.params.uuid, m, true);
        const subnet = await one<SubnetRow>(m, `${SUBNET_SELECT} WHERE s.uuid = $1 AND s.vpc_uuid = $2`, [
          ctx.params.subnet_uuid,
          vpc.uuid,
        ]);
        if (!subnet) throw notFound('subnet');
        if (subnet.attachment_count > 0) {
          throw unprocessable(`${subnet.attachment_count} workload(s) are attached to the subnet; detach them first`);
        }
        const before = await snapshot(m, 'vpc_subnets', subnet.uuid);
        await m.query(`DELETE FROM vpc_subnets WHERE uuid = $1`, [subnet.uuid]);
        await recordAudit(m, ctx, { resourceUuid: subnet.uuid, before, after: null });
      });
      return undefined;
    },
  }),
];
