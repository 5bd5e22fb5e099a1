import { randomUUID } from 'node:crypto';
import { SimulatedCore } from '../../activities/provider/simulated';
import { WIREGUARD_VAULT_MS, generateWireguardKeyPair } from '../../domain/wireguard';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';
import { timeSkipping, type TimeSkipping } from '../support/temporal';

let stack: TestStack;
let ts: TimeSkipping;
let ws: Workspace;

beforeAll(async () => {
  stack = await startStack();
  ts = await timeSkipping(stack.activityDeps);
  ws = await seedWorkspace(stack.ds);
});
afterAll(async () => {
  await ts?.close();
  await stack?.close();
});

async function pendingVpc(cidr = '10.224.0.0/16'): Promise<string> {
  const uuid = randomUUID();
  await stack.ds.query(
    `INSERT INTO vpcs (uuid, workspace_uuid, region_id, name, label, cidr_v4) VALUES ($1, $2, $3, $4, $4, $5)`,
    [uuid, ws.uuid, ws.regionId, `v-${uuid.slice(0, 8)}`, cidr],
  );
  await stack.ds.query(
    `INSERT INTO vpc_subnets (uuid, vpc_uuid, name, family, cidr_v4) VALUES ($1, $2, 'default', 'dual', '10.224.1.0/24')`,
    [randomUUID(), uuid],
  );
  return uuid;
}

describe('vpcCreate', () => {
  it('VPC-07 retries the driver with backoff through transient faults, then activates the VPC with its derived addresses', async () => {
    const vpcUuid = await pendingVpc();
    await SimulatedCore.injectFault(stack.ds, 'network.createRouter', 3, { retryable: true });
    const state = await ts.withWorker(() =>
      ts.client.workflow.execute('vpcCreate', {
        taskQueue: ts.taskQueue,
        workflowId: `vpc-create/${vpcUuid}`,
        args: [{ vpcUuid, cidrV4: '10.224.0.0/16' }],
      }),
    );
    expect(state).toBe('active');
    const [vpc] = await stack.ds.query(
      `SELECT status, cidr_v6::text, host(resolver_v4) AS resolver, vpn_pool_v4::text FROM vpcs WHERE uuid = $1`,
      [vpcUuid],
    );
    expect(vpc).toMatchObject({ status: 'active', resolver: '10.224.0.2', vpn_pool_v4: '10.224.0.128/25' });
    const [subnet] = await stack.ds.query(`SELECT cidr_v6::text FROM vpc_subnets WHERE vpc_uuid = $1`, [vpcUuid]);
    expect(subnet.cidr_v6).toBe(vpc.cidr_v6.replace('::/48', ':100::/64'));
  });

  it('VPC-14 moves the VPC to failed when the driver keeps failing, and removes what it created', async () => {
    const vpcUuid = await pendingVpc('10.226.0.0/16');
    await SimulatedCore.injectFault(stack.ds, 'network.createResolver', 100, { retryable: true });
    const state = await ts.withWorker(() =>
      ts.client.workflow.execute('vpcCreate', {
        taskQueue: ts.taskQueue,
        workflowId: `vpc-create/${vpcUuid}`,
        args: [{ vpcUuid, cidrV4: '10.226.0.0/16' }],
      }),
    );
    await SimulatedCore.clearFaults(stack.ds);
    expect(state).toBe('failed');
    const [vpc] = await stack.ds.query(`SELECT status, cidr_v6, failure_reason FROM vpcs WHERE uuid = $1`, [vpcUuid]);
    expect(vpc).toMatchObject({ status: 'failed', cidr_v6: null });
    expect(vpc.failure_reason).toContain('network.createResolver');
    expect(await stack.ds.query(`SELECT * FROM sim_network_components WHERE vpc_uuid = $1`, [vpcUuid])).toEqual([]);
  });
});

describe('vpnUserCreate', () => {
  it('VPN-07 VPN-09 the vault timer destroys an unread private key after 15 minutes (the key material is gone from the database)', async () => {
    const vpcUuid = await pendingVpc('10.227.0.0/16');
    await stack.ds.query(`UPDATE vpcs SET status = 'active', vpn_pool_v4 = '10.227.0.128/25' WHERE uuid = $1`, [
      vpcUuid,
    ]);
    const gatewayUuid = randomUUID();
    const gw = generateWireguardKeyPair();
    await stack.ds.query(
      `INSERT INTO vpc_vpn_gateways (uuid, vpc_uuid, kind, status, public_key) VALUES ($1, $2, 'wireguard', 'active', $3)`,
      [gatewayUuid, vpcUuid, gw.publicKey],
    );
    await stack.activityDeps.provider.network.enableGateway({
      gatewayUuid,
      vpcUuid,
      kind: 'wireguard',
      publicKey: gw.publicKey,
      credentials: null,
    });
    const device = generateWireguardKeyPair();
    const sealed = stack.secretBox.seal(device.privateKey);
    const userUuid = randomUUID();
    await stack.ds.query(
      `INSERT INTO vpc_vpn_users (uuid, vpc_uuid, gateway_uuid, name, public_key, address_v4, private_key_sealed, vault_expires_at)
       VALUES ($1, $2, $3, 'phone', $4, '10.227.0.129', $5, now() + interval '15 minutes')`,
      [userUuid, vpcUuid, gatewayUuid, device.publicKey, sealed],
    );
    // the contract's number, not the code's constant: the vault holds the key 15 minutes
    const CONTRACT_VAULT_MS = 15 * 60 * 1000;
    expect(WIREGUARD_VAULT_MS).toBe(CONTRACT_VAULT_MS);
    const started = await ts.env.currentTimeMs();
    const result = await ts.withWorker(async () => {
      const handle = await ts.client.workflow.start('vpnUserCreate', {
        taskQueue: ts.taskQueue,
        workflowId: `vpn-user-create/${userUuid}`,
        args: [{ userUuid, vaultMs: WIREGUARD_VAULT_MS }],
      });
      // a minute before the vault closes the key is still there to be read
      await ts.env.sleep(CONTRACT_VAULT_MS - 60_000);
      const [early] = await stack.ds.query(`SELECT private_key_sealed FROM vpc_vpn_users WHERE uuid = $1`, [userUuid]);
      expect(early.private_key_sealed).toBe(sealed);
      // and a little past the 15 minutes it is gone (the timer's activity runs once the time has passed)
      await ts.env.sleep(61_000);
      const result = await handle.result();
      const [late] = await stack.ds.query(`SELECT private_key_sealed FROM vpc_vpn_users WHERE uuid = $1`, [userUuid]);
      expect(late.private_key_sealed).toBeNull();
      return result;
    });
    expect(result).toBe('key-destroyed');
    expect((await ts.env.currentTimeMs()) - started).toBeGreaterThanOrEqual(CONTRACT_VAULT_MS);
    const [row] = await stack.ds.query(
      `SELECT status, private_key_sealed, key_destroyed_at FROM vpc_vpn_users WHERE uuid = $1`,
      [userUuid],
    );
    expect(row.status).toBe('active');
    expect(row.private_key_sealed).toBeNull();
    expect(row.key_destroyed_at).not.toBeNull();
    // Nowhere in the database is the sealed value or the key left.
    const dump =
      JSON.stringify(await stack.ds.query(`SELECT * FROM vpc_vpn_users`)) +
      JSON.stringify(await stack.ds.query(`SELECT * FROM sim_network_peers`));
    expect(dump).not.toContain(sealed);
    expect(dump).not.toContain(device.privateKey);
  });
});

describe('peerRoutesApply', () => {
  it('PEER-04 when the driver refuses the route table, every staged route fails and staged removals stay staged', async () => {
    const vpcUuid = await pendingVpc('10.228.0.0/16');
    await stack.ds.query(`UPDATE vpcs SET status = 'active' WHERE uuid = $1`, [vpcUuid]);
    const applyUuid = randomUUID();
    const staged = randomUUID();
    const removed = randomUUID();
    await stack.ds.query(
      `INSERT INTO vpc_peer_routes (uuid, vpc_uuid, cidr, gateway_kind, apply_uuid) VALUES ($1, $2, '192.168.1.0/24', 'mesh', $3)`,
      [staged, vpcUuid, applyUuid],
    );
    await stack.ds.query(
      `INSERT INTO vpc_peer_routes (uuid, vpc_uuid, cidr, gateway_kind, status, removed_at, apply_uuid) VALUES ($1, $2, '192.168.2.0/24', 'mesh', 'applied', now(), $3)`,
      [removed, vpcUuid, applyUuid],
    );
    await SimulatedCore.injectFault(stack.ds, 'network.applyRoutes', 1, {
      retryable: false,
      message: 'router rejected the table',
    });
    const outcome = await ts.withWorker(() =>
      ts.client.workflow.execute('peerRoutesApply', {
        taskQueue: ts.taskQueue,
        workflowId: `peer-routes-apply/${vpcUuid}/${applyUuid}`,
        args: [{ vpcUuid, applyUuid }],
      }),
    );
    expect(outcome).toEqual({ applied: 0, failed: 1 });
    const rows = await stack.ds.query(
      `SELECT uuid, status, failure_reason, apply_uuid FROM vpc_peer_routes WHERE vpc_uuid = $1`,
      [vpcUuid],
    );
    expect(rows.find((r: { uuid: string }) => r.uuid === staged)).toMatchObject({
      status: 'failed',
      failure_reason: 'router rejected the table',
    });
    expect(rows.find((r: { uuid: string }) => r.uuid === removed)).toMatchObject({
      status: 'applied',
      apply_uuid: null,
    });
  });
});
