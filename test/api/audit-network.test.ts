import { issueToken } from '../../bin/bootstrap';
import { REDACTED } from '../../domain/audit';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { eventually, expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';
import { activeVpc, auth, insertApp } from '../support/vpc';
import { RECEIVER_ALLOW, startDnsServer, startReceiver, type DnsServer, type Receiver } from '../support/webhooks';

/**
 * The audit log over the network area (VPCs and what lives in them), webhooks and container
 * registry credentials: creates and deletes record one entry each with the actor, resource
 * and field diff; secrets (VPN keys and credentials, site PSKs, the webhook signing secret,
 * registry tokens) show only as redacted; refused requests record nothing.
 */
let stack: TestStack;
let ws: Workspace;
let ownerMember: string;
let receiver: Receiver;
let dns: DnsServer;
let vpc: any;

beforeAll(async () => {
  dns = await startDnsServer();
  receiver = await startReceiver();
  stack = await startStack({
    env: {
      BERTH_PUBLIC_IPV4_POOLS: 'local=192.0.2.10/31',
      BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW,
      BERTH_DNS_SERVERS: dns.address,
    },
  });
  ws = await seedWorkspace(stack.ds);
  [{ uuid: ownerMember }] = await stack.ds.query(
    `SELECT uuid FROM members WHERE workspace_uuid = $1 AND user_uuid = $2`,
    [ws.uuid, ws.ownerUserUuid],
  );
  await stack.startWorker();
  vpc = await activeVpc(stack, ws);
});
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
  await dns?.close();
});

const owner = () => auth(ws.ownerToken);
const post = (path: string, body?: Record<string, unknown>) =>
  stack.http.post(`/api/v1${path}`).set(owner()).send(body);
const del = (path: string) => stack.http.delete(`/api/v1${path}`).set(owner());

/** The one entry of this action on the resource (fails unless there is exactly one). */
async function entryOf(resourceUuid: string, action: string): Promise<Record<string, any>> {
  const res = await stack.http.get(`/api/v1/audit_events?resource_uuid=${resourceUuid}`).set(owner());
  expect(res.status).toBe(200);
  const found = (res.body as Array<Record<string, any>>).filter((e) => e.action === action);
  expect(found).toHaveLength(1);
  return found[0]!;
}

/** Every diff the workspace's audit log holds, as text: no secret may appear in it. */
async function auditText(): Promise<string> {
  return JSON.stringify(await stack.ds.query(`SELECT diff FROM audit_events WHERE workspace_uuid = $1`, [ws.uuid]));
}

async function untilStatus(path: string, uuid: string, status: string): Promise<any> {
  return eventually(
    async () => {
      const list = (await stack.http.get(`/api/v1${path}`).set(owner())).body as Array<{
        uuid: string;
        status: string;
      }>;
      return list.find((x) => x.uuid === uuid && x.status === status);
    },
    { what: `${path} ${uuid} ${status}` },
  );
}

const byOwner = () => ({ actor: { type: 'member', uuid: ownerMember }, source: 'api' });

describe('VPCs and their subnets', () => {
  it('a VPC create and delete record vpc.create and vpc.delete; subnet creates and deletes record theirs', async () => {
    const made = await activeVpc(stack, ws, { name: 'doomed', label: 'Doomed', cidr_v4: '10.78.0.0/16' });
    const created = await entryOf(made.uuid, 'vpc.create');
    expect(created).toMatchObject({
      ...byOwner(),
      resource_type: 'vpc',
      resource_uuid: made.uuid,
      diff: {
        name: { to: 'doomed' },
        label: { to: 'Doomed' },
        cidr_v4: { to: '10.78.0.0/16' },
        status: { to: 'pending' },
      },
    });
    expect(created.diff.name).not.toHaveProperty('from');
    expect(created.request_id).toBeTruthy();

    const [defaultSubnet] = (await stack.http.get(`/api/v1/vpcs/${made.uuid}/subnets`).set(owner())).body;
    const subnet = await post(`/vpcs/${made.uuid}/subnets`, { name: 'extra', cidr_v4: '10.78.9.0/24' });
    expect(subnet.status).toBe(201);
    expect(await entryOf(subnet.body.uuid, 'vpc_subnet.create')).toMatchObject({
      ...byOwner(),
      resource_type: 'vpc_subnet',
      diff: { name: { to: 'extra' }, cidr_v4: { to: '10.78.9.0/24' }, vpc_uuid: { to: made.uuid } },
    });
    for (const s of [subnet.body, defaultSubnet])
      expect((await del(`/vpcs/${made.uuid}/subnets/${s.uuid}`)).status).toBe(204);
    const removed = await entryOf(subnet.body.uuid, 'vpc_subnet.delete');
    expect(removed).toMatchObject({
      resource_type: 'vpc_subnet',
      diff: { name: { from: 'extra' }, cidr_v4: { from: '10.78.9.0/24' } },
    });
    expect(removed.diff.name).not.toHaveProperty('to');
    await entryOf(defaultSubnet.uuid, 'vpc_subnet.delete');

    expect((await del(`/vpcs/${made.uuid}`)).status).toBe(202);
    expect(await entryOf(made.uuid, 'vpc.delete')).toMatchObject({
      ...byOwner(),
      resource_type: 'vpc',
      resource_uuid: made.uuid,
      diff: { status: { from: 'active', to: 'deleting' } },
    });
  });

  it('an attachment records its create and delete', async () => {
    const [subnet] = (await stack.http.get(`/api/v1/vpcs/${vpc.uuid}/subnets`).set(owner())).body;
    const app = await insertApp(stack.ds, ws, { name: 'audited-web' });
    const attached = await post(`/vpcs/${vpc.uuid}/attachments`, {
      subnet_uuid: subnet.uuid,
      attachable_type: 'App',
      attachable_uuid: app.uuid,
    });
    expect(attached.status).toBe(201);
    expect(await entryOf(attached.body.uuid, 'vpc_attachment.create')).toMatchObject({
      ...byOwner(),
      resource_type: 'vpc_attachment',
      diff: {
        attachable_type: { to: 'App' },
        attachable_uuid: { to: app.uuid },
        subnet_uuid: { to: subnet.uuid },
        status: { to: 'attaching' },
      },
    });
    await untilStatus(`/vpcs/${vpc.uuid}/attachments`, attached.body.uuid, 'attached');
    expect((await del(`/vpcs/${vpc.uuid}/attachments/${attached.body.uuid}`)).status).toBe(202);
    expect((await entryOf(attached.body.uuid, 'vpc_attachment.delete')).diff).toEqual({
      status: { from: 'attached', to: 'detaching' },
    });
  });
});

describe('VPN gateways, devices and site connections', () => {
  const clientSecret = 'zt-audit-secret-5e4d3c2b1a';
  const psk = 'psk_audit_0123456789abcdef';
  let zeroTrust: any;

  it('a gateway create shows its private key and credentials only as redacted; a delete records the state change', async () => {
    const wg = await post(`/vpcs/${vpc.uuid}/vpn_gateways`, { kind: 'wireguard' });
    const zt = await post(`/vpcs/${vpc.uuid}/vpn_gateways`, {
      kind: 'zero_trust',
      organization: 'acme',
      client_id: 'cid-1',
      client_secret: clientSecret,
    });
    const mesh = await post(`/vpcs/${vpc.uuid}/vpn_gateways`, { kind: 'mesh', auth_key: 'tskey-audit-mesh-key-77' });
    expect([wg.status, zt.status, mesh.status]).toEqual([201, 201, 201]);
    const wgEntry = await entryOf(wg.body.uuid, 'vpn_gateway.create');
    expect(wgEntry).toMatchObject({
      ...byOwner(),
      resource_type: 'vpn_gateway',
      diff: { kind: { to: 'wireguard' }, private_key_sealed: { to: REDACTED }, public_key: { to: wg.body.public_key } },
    });
    const ztEntry = await entryOf(zt.body.uuid, 'vpn_gateway.create');
    expect(ztEntry.diff).toMatchObject({ kind: { to: 'zero_trust' }, credentials_sealed: { to: REDACTED } });
    const sealed = (
      await stack.ds.query(
        `SELECT private_key_sealed AS k, credentials_sealed AS c FROM vpc_vpn_gateways WHERE uuid = ANY($1::uuid[])`,
        [[wg.body.uuid, zt.body.uuid]],
      )
    )
      .flatMap((r: { k: string | null; c: string | null }) => [r.k, r.c])
      .filter(Boolean) as string[];
    expect(sealed).toHaveLength(2);
    const privateKey = stack.secretBox.open(
      (await stack.ds.query(`SELECT private_key_sealed FROM vpc_vpn_gateways WHERE uuid = $1`, [wg.body.uuid]))[0]
        .private_key_sealed,
    );
    const text = await auditText();
    for (const s of [clientSecret, 'tskey-audit-mesh-key-77', privateKey, ...sealed]) expect(text).not.toContain(s);

    zeroTrust = await untilStatus(`/vpcs/${vpc.uuid}/vpn_gateways`, zt.body.uuid, 'active');
    await untilStatus(`/vpcs/${vpc.uuid}/vpn_gateways`, wg.body.uuid, 'active');
    await untilStatus(`/vpcs/${vpc.uuid}/vpn_gateways`, mesh.body.uuid, 'active');
    expect((await del(`/vpcs/${vpc.uuid}/vpn_gateways/${mesh.body.uuid}`)).status).toBe(202);
    expect((await entryOf(mesh.body.uuid, 'vpn_gateway.delete')).diff).toEqual({
      status: { from: 'active', to: 'deleting' },
    });
  });

  it('a WireGuard device create and delete: its sealed private key shows only as redacted', async () => {
    const user = await post(`/vpcs/${vpc.uuid}/vpn_users`, { name: 'audit-laptop' });
    expect(user.status).toBe(201);
    const [{ sealed }] = await stack.ds.query(
      `SELECT private_key_sealed AS sealed FROM vpc_vpn_users WHERE uuid = $1`,
      [user.body.uuid],
    );
    expect(await entryOf(user.body.uuid, 'vpn_user.create')).toMatchObject({
      ...byOwner(),
      resource_type: 'vpn_user',
      diff: {
        name: { to: 'audit-laptop' },
        private_key_sealed: { to: REDACTED },
        public_key: { to: user.body.public_key },
      },
    });
    await untilStatus(`/vpcs/${vpc.uuid}/vpn_users`, user.body.uuid, 'active');
    expect((await del(`/vpcs/${vpc.uuid}/vpn_users/${user.body.uuid}`)).status).toBe(202);
    expect((await entryOf(user.body.uuid, 'vpn_user.delete')).diff).toEqual({
      status: { from: 'active', to: 'deleting' },
      private_key_sealed: { from: REDACTED, to: REDACTED },
    });
    const text = await auditText();
    expect(text).not.toContain(sealed);
    expect(text).not.toContain(stack.secretBox.open(sealed));
  });

  it('a site connection create shows its pre-shared keys only as redacted; a delete records the state change', async () => {
    const made = await post(`/vpcs/${vpc.uuid}/site_connections`, {
      name: 'audit-office',
      gateway_uuid: zeroTrust.uuid,
      remote_address: '198.51.100.20',
      remote_cidrs: ['192.168.60.0/24'],
      tunnels: [{ pre_shared_key: psk }],
    });
    expect(made.status).toBe(201);
    const [{ sealed }] = await stack.ds.query(
      `SELECT tunnels_sealed AS sealed FROM vpc_site_connections WHERE uuid = $1`,
      [made.body.uuid],
    );
    expect(await entryOf(made.body.uuid, 'site_connection.create')).toMatchObject({
      ...byOwner(),
      resource_type: 'site_connection',
      diff: {
        name: { to: 'audit-office' },
        public_ip: { to: made.body.public_ip },
        tunnels_sealed: { to: REDACTED },
        tunnel_count: { to: 1 },
      },
    });
    await untilStatus(`/vpcs/${vpc.uuid}/site_connections`, made.body.uuid, 'active');
    expect((await del(`/vpcs/${vpc.uuid}/site_connections/${made.body.uuid}`)).status).toBe(202);
    expect((await entryOf(made.body.uuid, 'site_connection.delete')).diff).toEqual({
      status: { from: 'active', to: 'deleting' },
    });
    const text = await auditText();
    for (const s of [psk, sealed]) expect(text).not.toContain(s);
    expectNoSecretLeaks(stack, [psk, clientSecret, sealed]);
  });
});

describe('peer routes', () => {
  it('a peer route create, the apply and the delete of the applied route each record one entry (the WireGuard gateway is on)', async () => {
    const route = await post(`/vpcs/${vpc.uuid}/peer_routes`, {
      cidr: '192.168.50.0/24',
      gateway_kind: 'wireguard',
      description: 'office',
    });
    expect(route.status).toBe(201);
    expect(await entryOf(route.body.uuid, 'vpc_peer_route.create')).toMatchObject({
      ...byOwner(),
      resource_type: 'vpc_peer_route',
      diff: { cidr: { to: '192.168.50.0/24' }, gateway_kind: { to: 'wireguard' }, description: { to: 'office' } },
    });
    const applied = await post(`/vpcs/${vpc.uuid}/peer_routes/apply`);
    expect(applied.status).toBe(202);
    expect(await entryOf(vpc.uuid, 'vpc.apply_peer_routes')).toMatchObject({
      ...byOwner(),
      resource_type: 'vpc',
      diff: {
        apply_uuid: { to: applied.headers['x-apply-id'] },
        routes: { to: [route.body.uuid] },
        removals: { to: [] },
      },
    });
    await untilStatus(`/vpcs/${vpc.uuid}/peer_routes`, route.body.uuid, 'applied');
    expect((await del(`/vpcs/${vpc.uuid}/peer_routes/${route.body.uuid}`)).status).toBe(204);
    const removed = await entryOf(route.body.uuid, 'vpc_peer_route.delete');
    expect(removed).toMatchObject({ resource_type: 'vpc_peer_route', diff: { removed_at: { from: null } } });
    expect(typeof removed.diff.removed_at.to).toBe('string');
  });
});

describe('webhooks', () => {
  it('a create shows the signing secret only as redacted; the test ping, a retry and the delete each record one entry', async () => {
    const made = await post('/webhooks', { url: receiver.url, description: 'audited' });
    expect(made.status).toBe(201);
    const [{ sealed }] = await stack.ds.query(`SELECT secret_sealed AS sealed FROM webhooks WHERE uuid = $1`, [
      made.body.uuid,
    ]);
    const created = await entryOf(made.body.uuid, 'webhook.create');
    expect(created).toMatchObject({
      ...byOwner(),
      resource_type: 'webhook',
      resource_uuid: made.body.uuid,
      diff: {
        url: { to: receiver.url },
        description: { to: 'audited' },
        enabled: { to: true },
        secret_sealed: { to: REDACTED },
      },
    });

    const ping = await post(`/webhooks/${made.body.uuid}/test`);
    expect(ping.status).toBe(200);
    expect(await entryOf(made.body.uuid, 'webhook.test')).toMatchObject({
      ...byOwner(),
      resource_type: 'webhook',
      diff: { uuid: { to: ping.body.uuid }, event_type: { to: 'ping' }, status: { to: 'pending' } },
    });
    const settled = await eventually(
      async () => {
        const d = (await stack.http.get(`/api/v1/webhooks/${made.body.uuid}/deliveries/${ping.body.uuid}`).set(owner()))
          .body;
        return d.status === 'pending' ? undefined : d;
      },
      { what: 'ping settled' },
    );
    expect(settled.status).toBe('delivered');
    expect((await post(`/webhooks/${made.body.uuid}/deliveries/${ping.body.uuid}/retry`)).status).toBe(200);
    expect(await entryOf(ping.body.uuid, 'webhook_delivery.retry')).toMatchObject({
      ...byOwner(),
      resource_type: 'webhook_delivery',
      diff: { status: { from: 'delivered', to: 'pending' } },
    });

    expect((await del(`/webhooks/${made.body.uuid}`)).status).toBe(204);
    const deleted = await entryOf(made.body.uuid, 'webhook.delete');
    expect(deleted).toMatchObject({
      ...byOwner(),
      diff: { url: { from: receiver.url }, secret_sealed: { from: REDACTED } },
    });
    expect(deleted.diff.url).not.toHaveProperty('to');
    const text = await auditText();
    for (const s of [made.body.secret, sealed]) expect(text).not.toContain(s);
  });
});

describe('container registry credentials', () => {
  it('create, token change and delete: the token shows only as redacted; the actor of a workspace token is the token by its uuid', async () => {
    const first = 'ghp_auditFirstToken0123456789';
    const second = 'ghp_auditSecondToken9876543210';
    const ci = await issueToken(stack.ds.manager, { workspaceUuid: ws.uuid, name: 'ci', permissions: ['apps:manage'] });
    const made = await stack.http
      .post('/api/v1/container_registry_credentials')
      .set(auth(ci.token))
      .send({ name: 'ghcr', registry: 'github', username: 'robot', token: first });
    expect(made.status).toBe(201);
    expect(await entryOf(made.body.uuid, 'registry_credential.create')).toMatchObject({
      actor: { type: 'workspace_token', uuid: ci.uuid },
      resource_type: 'registry_credential',
      diff: { name: { to: 'ghcr' }, username: { to: 'robot' }, token_sealed: { to: REDACTED } },
    });
    const [{ sealed: sealedFirst }] = await stack.ds.query(
      `SELECT token_sealed AS sealed FROM container_registry_credentials WHERE uuid = $1`,
      [made.body.uuid],
    );
    const changed = await stack.http
      .put(`/api/v1/container_registry_credentials/${made.body.uuid}`)
      .set(owner())
      .send({ token: second });
    expect(changed.status).toBe(200);
    expect((await entryOf(made.body.uuid, 'registry_credential.update')).diff).toEqual({
      token_sealed: { from: REDACTED, to: REDACTED },
    });
    const [{ sealed: sealedSecond }] = await stack.ds.query(
      `SELECT token_sealed AS sealed FROM container_registry_credentials WHERE uuid = $1`,
      [made.body.uuid],
    );
    expect((await del(`/container_registry_credentials/${made.body.uuid}`)).status).toBe(204);
    expect(await entryOf(made.body.uuid, 'registry_credential.delete')).toMatchObject({
      ...byOwner(),
      diff: { name: { from: 'ghcr' }, registry: { from: 'github' }, token_sealed: { from: REDACTED } },
    });
    const text = await auditText();
    for (const s of [first, second, sealedFirst, sealedSecond, ci.token]) expect(text).not.toContain(s);
    expectNoSecretLeaks(stack, [first, second, sealedFirst, sealedSecond]);
  });
});

describe('refused requests', () => {
  it('a refused create, update or delete in these areas records nothing', async () => {
    const count = async () =>
      (await stack.ds.query(`SELECT count(*)::int AS n FROM audit_events WHERE workspace_uuid = $1`, [ws.uuid]))[0]
        .n as number;
    const hook = await post('/webhooks', { url: receiver.url });
    const cred = await post('/container_registry_credentials', {
      name: 'taken',
      registry: 'docker_hub',
      username: 'u',
      token: 'dckr_pat_abcdef123',
    });
    expect([hook.status, cred.status]).toEqual([201, 201]);
    const before = await count();
    const statuses = [
      (
        await post(`/vpcs/${vpc.uuid}/vpn_gateways`, {
          kind: 'zero_trust',
          organization: 'acme',
          client_id: 'cid-2',
          client_secret: 'another-secret-1',
        })
      ).status,
      (await post(`/vpcs/${vpc.uuid}/subnets`, { name: 'default', cidr_v4: '10.224.200.0/24' })).status,
      (
        await post('/container_registry_credentials', {
          name: 'taken',
          registry: 'docker_hub',
          username: 'u',
          token: 'dckr_pat_abcdef456',
        })
      ).status,
      (
        await stack.http
          .put(`/api/v1/container_registry_credentials/${cred.body.uuid}`)
          .set(owner())
          .send({ registry: 'generic' })
      ).status,
      (await del(`/webhooks/${vpc.uuid}`)).status,
      (await del(`/container_registry_credentials/${hook.body.uuid}`)).status,
    ];
    expect(statuses).toEqual([409, 409, 409, 422, 404, 404]);
    expect(await count()).toBe(before);
  });
});
