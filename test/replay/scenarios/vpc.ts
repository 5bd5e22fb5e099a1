import { seedWorkspace, type Workspace } from '../../support/fixtures';
import { eventually, type TestStack } from '../../support/stack';
import { activeVpc, auth, insertApp } from '../../support/vpc';
import type { History, ReplayScenario } from './types';

async function finished(stack: TestStack, workflowId: string): Promise<History> {
  const handle = stack.temporal.workflow.getHandle(workflowId);
  await handle.result();
  return handle.fetchHistory();
}

async function setup(
  stack: TestStack,
): Promise<{ ws: Workspace; vpc: any; subnet: string; h: Record<string, string> }> {
  const ws = await seedWorkspace(stack.ds);
  const vpc = await activeVpc(stack, ws);
  const h = auth(ws.ownerToken);
  const subnet = (await stack.http.get(`/api/v1/vpcs/${vpc.uuid}/subnets`).set(h)).body[0].uuid;
  return { ws, vpc, subnet, h };
}

async function gateway(
  stack: TestStack,
  vpc: any,
  h: Record<string, string>,
  body: Record<string, unknown>,
): Promise<string> {
  const res = await stack.http.post(`/api/v1/vpcs/${vpc.uuid}/vpn_gateways`).set(h).send(body).expect(201);
  await finished(stack, `vpn-gateway-enable/${res.body.uuid}`);
  return res.body.uuid;
}

export const vpcScenarios: ReplayScenario[] = [
  {
    name: 'vpc-create',
    async record(stack) {
      const { vpc } = await setup(stack);
      return finished(stack, `vpc-create/${vpc.uuid}`);
    },
  },
  {
    name: 'vpc-delete',
    async record(stack) {
      const { vpc, subnet, h } = await setup(stack);
      await stack.http.delete(`/api/v1/vpcs/${vpc.uuid}/subnets/${subnet}`).set(h).expect(204);
      await stack.http.delete(`/api/v1/vpcs/${vpc.uuid}`).set(h).expect(202);
      return finished(stack, `vpc-delete/${vpc.uuid}`);
    },
  },
  {
    name: 'vpc-attach',
    async record(stack) {
      const { ws, vpc, subnet, h } = await setup(stack);
      const app = await insertApp(stack.ds, ws);
      const res = await stack.http
        .post(`/api/v1/vpcs/${vpc.uuid}/attachments`)
        .set(h)
        .send({ subnet_uuid: subnet, attachable_type: 'App', attachable_uuid: app.uuid })
        .expect(201);
      return finished(stack, `vpc-attach/${res.body.uuid}`);
    },
  },
  {
    name: 'vpc-detach',
    async record(stack) {
      const { ws, vpc, subnet, h } = await setup(stack);
      const app = await insertApp(stack.ds, ws);
      const res = await stack.http
        .post(`/api/v1/vpcs/${vpc.uuid}/attachments`)
        .set(h)
        .send({ subnet_uuid: subnet, attachable_type: 'App', attachable_uuid: app.uuid })
        .expect(201);
      await finished(stack, `vpc-attach/${res.body.uuid}`);
      await stack.http.delete(`/api/v1/vpcs/${vpc.uuid}/attachments/${res.body.uuid}`).set(h).expect(202);
      return finished(stack, `vpc-detach/${res.body.uuid}`);
    },
  },
  {
    name: 'peer-routes-apply',
    async record(stack) {
      const { ws, vpc, subnet, h } = await setup(stack);
      for (let i = 0; i < 2; i++) {
        const app = await insertApp(stack.ds, ws);
        const res = await stack.http
          .post(`/api/v1/vpcs/${vpc.uuid}/attachments`)
          .set(h)
          .send({ subnet_uuid: subnet, attachable_type: 'App', attachable_uuid: app.uuid })
          .expect(201);
        await finished(stack, `vpc-attach/${res.body.uuid}`);
      }
      await gateway(stack, vpc, h, { kind: 'mesh', auth_key: 'tskey-replay-123' });
      await stack.http
        .post(`/api/v1/vpcs/${vpc.uuid}/peer_routes`)
        .set(h)
        .send({ cidr: '192.168.50.0/24', gateway_kind: 'mesh' })
        .expect(201);
      await stack.http
        .post(`/api/v1/vpcs/${vpc.uuid}/peer_routes`)
        .set(h)
        .send({ cidr: '192.168.60.0/24', gateway_kind: 'zero_trust' })
        .expect(201);
      const res = await stack.http.post(`/api/v1/vpcs/${vpc.uuid}/peer_routes/apply`).set(h).expect(202);
      return finished(stack, `peer-routes-apply/${vpc.uuid}/${res.headers['x-apply-id']}`);
    },
  },
  {
    name: 'vpn-gateway-enable',
    async record(stack) {
      const { vpc, h } = await setup(stack);
      const uuid = await gateway(stack, vpc, h, {
        kind: 'zero_trust',
        organization: 'acme',
        client_id: 'cid-1',
        client_secret: 'replay-secret-1',
      });
      return finished(stack, `vpn-gateway-enable/${uuid}`);
    },
  },
  {
    name: 'vpn-gateway-disable',
    async record(stack) {
      const { vpc, h } = await setup(stack);
      const uuid = await gateway(stack, vpc, h, { kind: 'wireguard' });
      await stack.http.delete(`/api/v1/vpcs/${vpc.uuid}/vpn_gateways/${uuid}`).set(h).expect(202);
      return finished(stack, `vpn-gateway-disable/${uuid}`);
    },
  },
  {
    name: 'vpn-user-create',
    async record(stack) {
      const { vpc, h } = await setup(stack);
      await gateway(stack, vpc, h, { kind: 'wireguard' });
      const user = await stack.http
        .post(`/api/v1/vpcs/${vpc.uuid}/vpn_users`)
        .set(h)
        .send({ name: 'replay-laptop' })
        .expect(201);
      await eventually(
        async () =>
          (await stack.http.get(`/api/v1/vpcs/${vpc.uuid}/vpn_users/${user.body.uuid}/config`).set(h)).status === 200,
        { what: 'config read' },
      );
      return finished(stack, `vpn-user-create/${user.body.uuid}`);
    },
  },
  {
    name: 'vpn-user-delete',
    async record(stack) {
      const { vpc, h } = await setup(stack);
      await gateway(stack, vpc, h, { kind: 'wireguard' });
      const user = await stack.http
        .post(`/api/v1/vpcs/${vpc.uuid}/vpn_users`)
        .set(h)
        .send({ name: 'replay-phone' })
        .expect(201);
      await eventually(
        async () => (await stack.http.get(`/api/v1/vpcs/${vpc.uuid}/vpn_users`).set(h)).body[0]?.status === 'active',
        { what: 'device active' },
      );
      await stack.http.delete(`/api/v1/vpcs/${vpc.uuid}/vpn_users/${user.body.uuid}`).set(h).expect(202);
      return finished(stack, `vpn-user-delete/${user.body.uuid}`);
    },
  },
  {
    name: 'site-connection-create',
    async record(stack) {
      const { vpc, h } = await setup(stack);
      const gw = await gateway(stack, vpc, h, { kind: 'mesh', auth_key: 'tskey-replay-456' });
      const res = await stack.http
        .post(`/api/v1/vpcs/${vpc.uuid}/site_connections`)
        .set(h)
        .send({
          name: 'replay-office',
          gateway_uuid: gw,
          remote_address: '198.51.100.7',
          remote_cidrs: ['192.168.100.0/24'],
          tunnels: [{ pre_shared_key: 'replaypsk123' }],
        })
        .expect(201);
      return finished(stack, `site-connection-create/${res.body.uuid}`);
    },
  },
  {
    name: 'site-connection-delete',
    async record(stack) {
      const { vpc, h } = await setup(stack);
      const gw = await gateway(stack, vpc, h, { kind: 'mesh', auth_key: 'tskey-replay-789' });
      const res = await stack.http
        .post(`/api/v1/vpcs/${vpc.uuid}/site_connections`)
        .set(h)
        .send({
          name: 'replay-branch',
          gateway_uuid: gw,
          remote_address: '198.51.100.8',
          remote_cidrs: ['192.168.101.0/24'],
          tunnels: [{ pre_shared_key: 'replaypsk456' }],
        })
        .expect(201);
      await finished(stack, `site-connection-create/${res.body.uuid}`);
      await stack.http.delete(`/api/v1/vpcs/${vpc.uuid}/site_connections/${res.body.uuid}`).set(h).expect(202);
      return finished(stack, `site-connection-delete/${res.body.uuid}`);
    },
  },
];
