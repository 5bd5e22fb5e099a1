import { randomUUID } from 'node:crypto';
import { Problem } from '../../api/problem';
import { recordVpcJoin, resolveVpcJoin } from '../../api/vpc-join';
import { createResource, seedWorkspace, type Workspace } from '../support/fixtures';
import { eventually, startStack, type TestStack } from '../support/stack';
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

describe('POST /apps joining a VPC', () => {
  it('APP-11 vpc_subnet_uuid joins the app at creation, attached, without a restart; the subnet implies its VPC', async () => {
    const res = await stack.http.post('/api/v1/apps').set(auth(ws.ownerToken))
      .send({ name: 'joined', resource_id: ws.resourceUuid, vpc_subnet_uuid: subnet('backend') });
    expect(res.status).toBe(201);
    const [attachment] = await stack.ds.query(`SELECT vpc_uuid, subnet_uuid, status, attachable_type FROM vpc_attachments WHERE attachable_uuid = $1`, [res.body.uuid]);
    expect(attachment).toEqual({ vpc_uuid: vpc.uuid, subnet_uuid: subnet('backend'), status: 'attached', attachable_type: 'App' });
    expect(await restartsOf(stack.ds, res.body.uuid)).toEqual([]);
    const withVpcOnly = await stack.http.post('/api/v1/apps').set(auth(ws.ownerToken)).send({ name: 'joined-default', resource_id: ws.resourceUuid, vpc_uuid: vpc.uuid });
    expect(withVpcOnly.status).toBe(201);
    const [other] = await stack.ds.query(`SELECT subnet_uuid FROM vpc_attachments WHERE attachable_uuid = $1`, [withVpcOnly.body.uuid]);
    expect(other.subnet_uuid).toBe(subnet('default'));
  });

  it('APP-12 a VPC in another region than resource_id gets 422 and nothing is written', async () => {
    const [{ id }] = await stack.ds.query(`INSERT INTO regions (name, code, domain) VALUES ('Far', 'far-join', 'far.berth.localhost') RETURNING id`);
    const far = await createResource(stack.ds, ws.uuid, id, 'far-join-1');
    const before = await stack.ds.query(`SELECT count(*)::int AS n FROM apps`);
    const res = await stack.http.post('/api/v1/apps').set(auth(ws.ownerToken)).send({ name: 'faraway', resource_id: far, vpc_uuid: vpc.uuid });
    expect(res.status).toBe(422);
    expect(await stack.ds.query(`SELECT count(*)::int AS n FROM apps`)).toEqual(before);
    const mismatch = await stack.http.post('/api/v1/apps').set(auth(ws.ownerToken)).send({ name: 'mismatch', resource_id: ws.resourceUuid, vpc_uuid: randomUUID(), vpc_subnet_uuid: subnet('backend') });
    expect(mismatch.status).toBe(422);
  });
});

describe('deleting an app', () => {
  it('ATT-03 removes its VPC attachments (unplugged, no restart) and its add-ons along with it', async () => {
    const res = await stack.http.post('/api/v1/apps').set(auth(ws.ownerToken)).send({ name: 'leaving', resource_id: ws.resourceUuid, vpc_uuid: vpc.uuid });
    expect(res.status).toBe(201);
    const [addon] = await stack.ds.query(
      `INSERT INTO addons (uuid, workspace_uuid, kind, app_uuid, resource_uuid, type, name, label, state)
       VALUES (gen_random_uuid(), $1, 'addon', $2, $3, 'valkey', 'leaving-cache', 'cache', 'healthy') RETURNING uuid`,
      [ws.uuid, res.body.uuid, ws.resourceUuid]);
    await stack.http.delete(`/api/v1/apps/${res.body.uuid}`).set(auth(ws.ownerToken)).expect(202);
    const handle = stack.temporal.workflow.getHandle(`app-delete/${res.body.uuid}`);
    await eventually(async () => (await handle.describe().catch(() => null))?.status.name === 'COMPLETED', { what: 'app deleted', timeoutMs: 30_000 });
    expect(await stack.ds.query(`SELECT 1 FROM vpc_attachments WHERE attachable_uuid = $1`, [res.body.uuid])).toEqual([]);
    expect(await stack.ds.query(`SELECT 1 FROM addons WHERE uuid = $1`, [addon.uuid])).toEqual([]);
    expect(await stack.ds.query(`SELECT 1 FROM apps WHERE uuid = $1`, [res.body.uuid])).toEqual([]);
    expect(await restartsOf(stack.ds, res.body.uuid)).toEqual([]);
  });
});
