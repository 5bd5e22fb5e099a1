import { randomUUID } from 'node:crypto';
import { Problem } from '../../api/problem';
import { recordVpcJoin, resolveVpcJoin } from '../../api/vpc-join';
import { createResource, seedWorkspace, type Workspace } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';
import { activeVpc, auth, insertApp, restartsOf } from '../support/vpc';

/**
 * The function POST /apps calls to join a VPC at creation (vpc_uuid / vpc_subnet_uuid):
 * tested at function level here; the apps route wires it in.
 */
let stack: TestStack;
let ws: Workspace;
let vpc: any;
let subnets: any[];

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
  await stack.startWorker();
  vpc = await activeVpc(stack, ws);
  await stack.http.post(`/api/v1/vpcs/${vpc.uuid}/subnets`).set(auth(ws.ownerToken)).send({ name: 'backend', cidr_v4: '10.224.2.0/24' }).expect(201);
  subnets = (await stack.http.get(`/api/v1/vpcs/${vpc.uuid}/subnets`).set(auth(ws.ownerToken))).body;
});
afterAll(() => stack.close());

const subnet = (name: string) => subnets.find((s) => s.name === name).uuid;

async function problemOf(fn: () => Promise<unknown>): Promise<Problem> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof Problem) return err;
    throw err;
  }
  throw new Error('expected a problem');
}

describe('joining a VPC at app creation (vpc-join)', () => {
  it('the subnet implies its VPC; the attachment is recorded in the caller\'s transaction, attached, with no restart', async () => {
    const app = { uuid: randomUUID(), name: `joined-${randomUUID().slice(0, 6)}` };
    const row = await stack.ds.transaction(async (m) => {
      await m.query(`INSERT INTO apps (uuid, workspace_uuid, resource_uuid, name, service_name, label) VALUES ($1, $2, $3, $4, $4, $4)`,
        [app.uuid, ws.uuid, ws.resourceUuid, app.name]);
      const join = await resolveVpcJoin(m, { workspaceUuid: ws.uuid, resourceUuid: ws.resourceUuid, subnetUuid: subnet('backend') });
      expect(join!.vpc.uuid).toBe(vpc.uuid);
      return recordVpcJoin(m, join!, app);
    });
    expect(row).toMatchObject({ vpc_uuid: vpc.uuid, subnet_uuid: subnet('backend'), status: 'attached', fqdn: `${app.name}.default.vpc.local.berth.localhost` });
    expect(await restartsOf(stack.ds, app.uuid)).toEqual([]);
    expect(await stack.ds.query(`SELECT 1 FROM operations WHERE resource_uuid = $1`, [row.uuid])).toEqual([]);
    expect((await stack.http.get(`/api/v1/vpcs/${vpc.uuid}`).set(auth(ws.ownerToken))).body.attachment_count).toBe(1);
  });

  it('with only vpc_uuid the default subnet is used; with neither nothing happens', async () => {
    const join = await resolveVpcJoin(stack.ds.manager, { workspaceUuid: ws.uuid, resourceUuid: ws.resourceUuid, vpcUuid: vpc.uuid });
    expect(join!.subnetUuid).toBe(subnet('default'));
    expect(await resolveVpcJoin(stack.ds.manager, { workspaceUuid: ws.uuid, resourceUuid: ws.resourceUuid })).toBeNull();
  });

  it('refuses with 422: a subnet of another VPC than vpc_uuid, unknown ids, and a VPC in another region than the resource', async () => {
    const other = await activeVpc(stack, ws, { name: 'other', cidr_v4: '10.225.0.0/16' });
    const mismatch = await problemOf(() => resolveVpcJoin(stack.ds.manager, { workspaceUuid: ws.uuid, resourceUuid: ws.resourceUuid, vpcUuid: other.uuid, subnetUuid: subnet('backend') }));
    expect(mismatch.status).toBe(422);
    expect(mismatch.errors![0]!.path).toBe('body.vpc_uuid');
    for (const req of [{ vpcUuid: randomUUID() }, { subnetUuid: randomUUID() }]) {
      expect((await problemOf(() => resolveVpcJoin(stack.ds.manager, { workspaceUuid: ws.uuid, resourceUuid: ws.resourceUuid, ...req }))).status).toBe(422);
    }
    const eu = await seedWorkspace(stack.ds, { regionCode: 'ap-south' });
    const euResource = await createResource(stack.ds.manager, ws.uuid, eu.regionId, 'ap-box');
    const region = await problemOf(() => resolveVpcJoin(stack.ds.manager, { workspaceUuid: ws.uuid, resourceUuid: euResource, vpcUuid: vpc.uuid }));
    expect(region.status).toBe(422);
    expect(region.detail).toContain('ap-south');
    // Another workspace's VPC is unknown.
    const stranger = await seedWorkspace(stack.ds);
    expect((await problemOf(() => resolveVpcJoin(stack.ds.manager, { workspaceUuid: stranger.uuid, resourceUuid: stranger.resourceUuid, vpcUuid: vpc.uuid }))).status).toBe(422);
  });

  it('an app already in the VPC cannot join it twice (409)', async () => {
    const app = await insertApp(stack.ds, ws);
    const join = (await resolveVpcJoin(stack.ds.manager, { workspaceUuid: ws.uuid, resourceUuid: ws.resourceUuid, vpcUuid: vpc.uuid }))!;
    await recordVpcJoin(stack.ds.manager, join, app);
    expect((await problemOf(() => recordVpcJoin(stack.ds.manager, join, app))).status).toBe(409);
  });
});
