import { randomUUID } from 'node:crypto';
import { IsNull, Not } from 'typeorm';
import { cidr4, overlaps, type Cidr4 } from '../../domain/vpc';
import { insertReturning } from '../../entities/sql';
import { VpcPeerRoute } from '../../entities/vpc';
import type { Caller } from '../context';
import { conflict, notFound, unprocessable } from '../problem';
import { snapshotOf, type Tx } from './audited-write';
import { assertVpcActive, findVpc } from './vpcs';

/** POST /vpcs/{uuid}/peer_routes (range checked): a staged route (pending) outside the VPC's own range, one per range. */
export async function createPeerRoute(
  tx: Tx,
  caller: Caller,
  input: { vpcUuid: string; cidr: string; range: Cidr4; gateway_kind: string; description?: string },
): Promise<VpcPeerRoute> {
  const vpc = await findVpc({ caller, deps: tx.deps }, input.vpcUuid, tx.m, true);
  assertVpcActive(vpc);
  if (overlaps(input.range, cidr4(vpc.cidr_v4))) {
    throw unprocessable(`${input.cidr} overlaps the VPC's own range ${vpc.cidr_v4}`, [
      { path: 'body.cidr', message: 'overlaps the VPC range' },
    ]);
  }
  // ON CONFLICT DO NOTHING: the uuid is fresh, so the one conflict possible is the range (vpc_peer_routes_cidr).
  const route = await insertReturning(
    tx.m,
    VpcPeerRoute,
    {
      uuid: randomUUID(),
      vpc_uuid: vpc.uuid,
      cidr: input.cidr,
      gateway_kind: input.gateway_kind,
      description: input.description ?? '',
    },
    { ignoreConflict: true },
  );
  if (!route) throw conflict(`the VPC already has a route for ${input.cidr}`);
  await tx.audit({ action: 'vpc_peer_route.create', resourceUuid: route.uuid, before: null, after: snapshotOf(route) });
  return route;
}

/**
 * POST /vpcs/{uuid}/peer_routes/apply: every staged route and staged removal is claimed by one
 * apply (its workflow installs them); 422 when nothing is staged, 409 while an apply runs.
 */
export async function applyPeerRoutes(
  tx: Tx,
  caller: Caller,
  input: { vpcUuid: string; applyUuid: string },
): Promise<VpcPeerRoute[]> {
  const { applyUuid } = input;
  const vpc = await findVpc({ caller, deps: tx.deps }, input.vpcUuid, tx.m, true);
  assertVpcActive(vpc);
  const staged = await tx.m
    .createQueryBuilder(VpcPeerRoute, 'r')
    .select(['r.uuid', 'r.apply_uuid'])
    .where("r.vpc_uuid = :vpc AND (r.status = 'pending' OR r.removed_at IS NOT NULL)", { vpc: vpc.uuid })
    .getMany();
  const unclaimed = staged.filter((r) => r.apply_uuid === null);
  if (staged.length === 0) throw unprocessable('nothing is staged: create or delete a peer route first');
  if (unclaimed.length === 0) throw conflict('an apply of the staged routes is already running');
  await tx.m
    .createQueryBuilder()
    .update(VpcPeerRoute)
    .set({ apply_uuid: applyUuid })
    .where('uuid IN (:...uuids)', { uuids: unclaimed.map((r) => r.uuid) })
    .execute();
  await tx.enqueue({
    operation: 'peer-routes-apply',
    workflow: 'peerRoutesApply',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: vpc.uuid,
    subId: applyUuid,
    args: [{ vpcUuid: vpc.uuid, applyUuid }],
  });
  const routes = await tx.m.find(VpcPeerRoute, {
    where: { apply_uuid: applyUuid, removed_at: IsNull() },
    order: { created_at: 'DESC', uuid: 'DESC' },
  });
  const removals = await tx.m.find(VpcPeerRoute, {
    where: { apply_uuid: applyUuid, removed_at: Not(IsNull()) },
    select: { uuid: true },
    order: { uuid: 'ASC' },
  });
  // The VPC's change: which staged routes (and staged removals) this apply installs.
  await tx.audit({
    action: 'vpc.apply_peer_routes',
    resourceUuid: vpc.uuid,
    before: null,
    after: { apply_uuid: applyUuid, routes: routes.map((r) => r.uuid).sort(), removals: removals.map((r) => r.uuid) },
  });
  return routes;
}

/**
 * DELETE /vpcs/{uuid}/peer_routes/{route_uuid}: a route not yet in the cluster goes at once; an
 * applied one is staged for removal by the next apply; 409 while it is being applied.
 */
export async function deletePeerRoute(
  tx: Tx,
  caller: Caller,
  input: { vpcUuid: string; routeUuid: string },
): Promise<void> {
  const vpc = await findVpc({ caller, deps: tx.deps }, input.vpcUuid, tx.m, true);
  const found = await tx.m
    .createQueryBuilder(VpcPeerRoute, 'r')
    .where('r.uuid = :uuid AND r.vpc_uuid = :vpc AND r.removed_at IS NULL', { uuid: input.routeUuid, vpc: vpc.uuid })
    .getOne();
  if (!found) throw notFound('peer route');
  if (found.status === 'pending' && found.apply_uuid !== null)
    throw conflict('the route is being applied; delete it once the apply finished');
  let after: VpcPeerRoute | null = null;
  if (found.status === 'applied') {
    const staged = await tx.m
      .createQueryBuilder()
      .update(VpcPeerRoute)
      .set({ removed_at: () => 'now()', apply_uuid: null })
      .where('uuid = :uuid', { uuid: found.uuid })
      .returning('*')
      .updateEntity(false)
      .execute();
    after = tx.m.create(VpcPeerRoute, (staged.raw as VpcPeerRoute[])[0]!);
  } else {
    await tx.m.delete(VpcPeerRoute, { uuid: found.uuid });
  }
  await tx.audit({
    action: 'vpc_peer_route.delete',
    resourceUuid: found.uuid,
    before: snapshotOf(found),
    after: snapshotOf(after),
  });
}
