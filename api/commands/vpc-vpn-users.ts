import { randomUUID } from 'node:crypto';
import { cidr4, vpnPoolAddresses } from '../../domain/vpc';
import { WIREGUARD_VAULT_MS, generateWireguardKeyPair } from '../../domain/wireguard';
import { columnsOf, hydrated } from '../../entities/columns';
import { rows, updateReturning } from '../../entities/sql';
import { VpcVpnGateway, VpcVpnUser } from '../../entities/vpc';
import type { Caller } from '../context';
import { conflict, notFound, unprocessable } from '../problem';
import type { VpnUserRow } from '../views/vpcs';
import { snapshotOf, type Tx } from './audited-write';
import { assertVpcActive, findVpc } from './vpcs';

/** The device as its view reads it: whether a key still waits in the vault, never the key. */
function vpnUserRow({ private_key_sealed, ...user }: VpcVpnUser): VpnUserRow {
  return { ...user, has_key: private_key_sealed !== null };
}

/**
 * POST /vpcs/{uuid}/vpn_users: a WireGuard device (state pending) on the VPC's active wireguard
 * gateway (422 without one), a free address of the VPN pool, its private key sealed in the vault.
 */
export async function createVpnUser(
  tx: Tx,
  caller: Caller,
  input: { vpcUuid: string; name: string },
): Promise<VpnUserRow> {
  const vpc = await findVpc({ caller, deps: tx.deps }, input.vpcUuid, tx.m, true);
  assertVpcActive(vpc);
  const gateway = await tx.m.findOne(VpcVpnGateway, {
    where: { vpc_uuid: vpc.uuid, kind: 'wireguard', status: 'active' },
    select: { uuid: true },
  });
  if (!gateway) throw unprocessable('WireGuard is not enabled on this VPC: turn on a wireguard VPN gateway first');
  if (await tx.m.existsBy(VpcVpnUser, { vpc_uuid: vpc.uuid, name: input.name }))
    throw conflict(`a VPN user named "${input.name}" already exists in this VPC`);
  const taken = await tx.m.find(VpcVpnUser, {
    where: { vpc_uuid: vpc.uuid },
    select: { uuid: true, address_v4: true },
  });
  const used = new Set(taken.map((u) => u.address_v4));
  const free = vpnPoolAddresses(cidr4(vpc.vpn_pool_v4!)).filter((a) => !used.has(a));
  const keys = generateWireguardKeyPair();
  const uuid = randomUUID();
  let user: VpcVpnUser | undefined;
  // The unique (vpc, address) index settles races: try the next free address.
  for (const address of free.slice(0, 8)) {
    // Raw: ON CONFLICT forgives the address only (a name taken in a race must still fail), and the
    // vault's expiry is the database's clock plus the vault time.
    [user] = hydrated(
      VpcVpnUser,
      await rows<VpcVpnUser>(
        tx.m,
        `INSERT INTO vpc_vpn_users (uuid, vpc_uuid, gateway_uuid, name, public_key, address_v4, private_key_sealed, vault_expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, now() + $8 * interval '1 millisecond')
         ON CONFLICT ON CONSTRAINT vpc_vpn_users_address DO NOTHING RETURNING ${columnsOf(VpcVpnUser)}`,
        [
          uuid,
          vpc.uuid,
          gateway.uuid,
          input.name,
          keys.publicKey,
          address,
          tx.deps.secretBox.seal(keys.privateKey),
          WIREGUARD_VAULT_MS,
        ],
      ),
    );
    if (user) break;
  }
  if (!user) throw unprocessable(`the VPN pool ${vpc.vpn_pool_v4} has no free address`);
  await tx.audit({ action: 'vpn_user.create', resourceUuid: uuid, before: null, after: snapshotOf(user) });
  await tx.enqueue({
    operation: 'vpn-user-create',
    workflow: 'vpnUserCreate',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: uuid,
    args: [{ userUuid: uuid, vaultMs: WIREGUARD_VAULT_MS }],
  });
  return vpnUserRow(user);
}

/**
 * DELETE /vpcs/{uuid}/vpn_users/{user_uuid}: the device moves to deleting, any key left in its
 * vault is destroyed, its removal workflow is enqueued; 409 while pending. Deleting again changes nothing.
 */
export async function deleteVpnUser(
  tx: Tx,
  caller: Caller,
  input: { vpcUuid: string; userUuid: string },
): Promise<VpnUserRow> {
  const vpc = await findVpc({ caller, deps: tx.deps }, input.vpcUuid, tx.m, true);
  const found = await tx.m.findOneBy(VpcVpnUser, { uuid: input.userUuid, vpc_uuid: vpc.uuid });
  if (!found) throw notFound('VPN user');
  const audit = (after: VpcVpnUser) =>
    tx.audit({
      action: 'vpn_user.delete',
      resourceUuid: found.uuid,
      before: snapshotOf(found),
      after: snapshotOf(after),
    });
  if (found.status === 'deleting') {
    await audit(found);
    return vpnUserRow(found);
  }
  if (found.status === 'pending') throw conflict('the device is still being added; delete it once it is active');
  const updated = (await updateReturning(tx.m, VpcVpnUser, found.uuid, {
    status: 'deleting',
    private_key_sealed: null,
  }))!;
  await tx.enqueue({
    operation: 'vpn-user-delete',
    workflow: 'vpnUserDelete',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: found.uuid,
    args: [{ userUuid: found.uuid }],
  });
  await audit(updated);
  return vpnUserRow(updated);
}
