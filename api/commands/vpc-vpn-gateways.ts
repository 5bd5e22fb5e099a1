import { randomUUID } from 'node:crypto';
import { WIREGUARD_PORT, generateWireguardKeyPair } from '../../domain/wireguard';
import { insertReturning, updateReturning } from '../../entities/sql';
import { VpcSiteConnection, VpcVpnGateway, VpcVpnUser } from '../../entities/vpc';
import type { Caller } from '../context';
import { conflict, notFound, unprocessable } from '../problem';
import { snapshotOf, type Tx } from './audited-write';
import { assertVpcActive, findVpc } from './vpcs';

/**
 * POST /vpcs/{uuid}/vpn_gateways (credentials checked for the kind): the gateway in state
 * pending, one of each kind per VPC (409); a wireguard gateway gets its key pair (the private
 * key sealed), credentials are sealed; its enabling workflow is enqueued.
 */
export async function createVpnGateway(
  tx: Tx,
  caller: Caller,
  input: { vpcUuid: string; kind: string; credentials: Record<string, string | undefined> | null },
): Promise<VpcVpnGateway> {
  const vpc = await findVpc({ caller, deps: tx.deps }, input.vpcUuid, tx.m, true);
  assertVpcActive(vpc);
  const uuid = randomUUID();
  const pair = input.kind === 'wireguard' ? generateWireguardKeyPair() : null;
  // ON CONFLICT DO NOTHING: the uuid is fresh, so the one conflict possible is the kind (vpc_vpn_gateways_one_per_kind).
  const gateway = await insertReturning(
    tx.m,
    VpcVpnGateway,
    {
      uuid,
      vpc_uuid: vpc.uuid,
      kind: input.kind,
      public_key: pair?.publicKey ?? null,
      private_key_sealed: pair ? tx.deps.secretBox.seal(pair.privateKey) : null,
      endpoint: pair ? `${uuid.slice(0, 8)}.vpn.${vpc.region_domain}:${WIREGUARD_PORT}` : null,
      credentials_sealed: input.credentials ? tx.deps.secretBox.seal(JSON.stringify(input.credentials)) : null,
    },
    { ignoreConflict: true },
  );
  if (!gateway) throw conflict(`the VPC already has a ${input.kind} gateway (one of each kind per VPC)`);
  await tx.audit({ action: 'vpn_gateway.create', resourceUuid: uuid, before: null, after: snapshotOf(gateway) });
  await tx.enqueue({
    operation: 'vpn-gateway-enable',
    workflow: 'vpnGatewayEnable',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: uuid,
    args: [{ gatewayUuid: uuid }],
  });
  return gateway;
}

/**
 * DELETE /vpcs/{uuid}/vpn_gateways/{gateway_uuid}: the gateway and its WireGuard devices move to
 * deleting and its disabling workflow is enqueued; 422 while site-to-site connections terminate
 * on it, 409 while pending. Deleting again changes nothing.
 */
export async function deleteVpnGateway(
  tx: Tx,
  caller: Caller,
  input: { vpcUuid: string; gatewayUuid: string },
): Promise<VpcVpnGateway> {
  const vpc = await findVpc({ caller, deps: tx.deps }, input.vpcUuid, tx.m, true);
  const found = await tx.m.findOne(VpcVpnGateway, {
    where: { uuid: input.gatewayUuid, vpc_uuid: vpc.uuid },
    lock: { mode: 'pessimistic_write' },
  });
  if (!found) throw notFound('VPN gateway');
  const audit = (after: VpcVpnGateway) =>
    tx.audit({
      action: 'vpn_gateway.delete',
      resourceUuid: found.uuid,
      before: snapshotOf(found),
      after: snapshotOf(after),
    });
  if (found.status === 'deleting') {
    await audit(found);
    return found;
  }
  if (found.status === 'pending') throw conflict('the gateway is still being enabled; disable it once it is active');
  const n = await tx.m.countBy(VpcSiteConnection, { gateway_uuid: found.uuid });
  if (n > 0) throw unprocessable(`${n} site-to-site connection(s) terminate on this gateway; delete them first`);
  const updated = (await updateReturning(tx.m, VpcVpnGateway, found.uuid, { status: 'deleting' }))!;
  await tx.m
    .createQueryBuilder()
    .update(VpcVpnUser)
    .set({ status: 'deleting' })
    .where('gateway_uuid = :gateway', { gateway: found.uuid })
    .execute();
  await tx.enqueue({
    operation: 'vpn-gateway-disable',
    workflow: 'vpnGatewayDisable',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: found.uuid,
    args: [{ gatewayUuid: found.uuid }],
  });
  await audit(updated);
  return updated;
}
