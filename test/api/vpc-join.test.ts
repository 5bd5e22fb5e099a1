import { randomUUID } from 'node:crypto';
import { SimulatedCore } from '../../activities/provider/simulated/core';
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
  await stack.http
    .post(`/api/v1/vpcs/${vpc.uuid}/subnets`)
    .set(auth(ws.ownerToken))
    .send({ name: 'backend', cidr_v4: '10.224.2.0/24' })
    .expect(201);
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
  it("the subnet implies its VPC; the attachment is recorded in the caller's transaction, attached, with no restart", async () => {
    const app = { uuid: randomUUID(), name: `joined-${randomUUID().slice(0, 6)}` };
    const row = await stack.ds.transaction(async (m) => {
      await m.query(
        `INSERT INTO apps (uuid, workspace_uuid, resource_uuid, name, service_name, label) VALUES ($1, $2, $3, $4, $4, $4)`,
        [app.uuid, ws.uuid, ws.resourceUuid, app.name],
      );
      const join = await resolveVpcJoin(m, {
        workspaceUuid: ws.uuid,
        resourceUuid: ws.resourceUuid,
        subnetUuid: subnet('backend'),
      });
      expect(join!.vpc.uuid).toBe(vpc.uuid);
      return recordVpcJoin(m, join!, app);
    });
    expect(row).toMatchObject({
      vpc_uuid: vpc.uuid,
      subnet_uuid: subnet('backend'),
      status: 'attached',
      fqdn: `${app.name}.default.vpc.local.berth.localhost`,
    });
    expect(await restartsOf(stack.ds, app.uuid)).toEqual([]);
    expect(await stack.ds.query(`SELECT 1 FROM operations WHERE resource_uuid = $1`, [row.uuid])).toEqual([]);
    expect((await stack.http.get(`/api/v1/vpcs/${vpc.uuid}`).set(auth(ws.ownerToken))).body.attachment_count).toBe(1);
  });

  it('with only vpc_uuid the default subnet is used; with neither nothing happens', async () => {
    const join = await resolveVpcJoin(stack.ds.manager, {
      workspaceUuid: ws.uuid,
      resourceUuid: ws.resourceUuid,
      vpcUuid: vpc.uuid,
    });
    expect(join!.subnetUuid).toBe(subnet('default'));
    expect(
      await resolveVpcJoin(stack.ds.manager, { workspaceUuid: ws.uuid, resourceUuid: ws.resourceUuid }),
    ).toBeNull();
  });

  it('refuses with 422: a subnet of another VPC than vpc_uuid, unknown ids, and a VPC in another region than the resource', async () => {
    const other = await activeVpc(stack, ws, { name: 'other', cidr_v4: '10.225.0.0/16' });
    const mismatch = await problemOf(() =>
      resolveVpcJoin(stack.ds.manager, {
        workspaceUuid: ws.uuid,
        resourceUuid: ws.resourceUuid,
        vpcUuid: other.uuid,
        subnetUuid: subnet('backend'),
      }),
    );
    expect(mismatch.status).toBe(422);
    expect(mismatch.errors![0]!.path).toBe('body.vpc_uuid');
    for (const req of [{ vpcUuid: randomUUID() }, { subnetUuid: randomUUID() }]) {
      expect(
        (
          await problemOf(() =>
            resolveVpcJoin(stack.ds.manager, { workspaceUuid: ws.uuid, resourceUuid: ws.resourceUuid, ...req }),
          )
        ).status,
      ).toBe(422);
    }
    const eu = await seedWorkspace(stack.ds, { regionCode: 'ap-south' });
    const euResource = await createResource(stack.ds.manager, ws.uuid, eu.regionId, 'ap-box');
    const region = await problemOf(() =>
      resolveVpcJoin(stack.ds.manager, { workspaceUuid: ws.uuid, resourceUuid: euResource, vpcUuid: vpc.uuid }),
    );
    expect(region.status).toBe(422);
    expect(region.detail).toContain('ap-south');
    // Another workspace's VPC is unknown.
    const stranger = await seedWorkspace(stack.ds);
    expect(
      (
        await problemOf(() =>
          resolveVpcJoin(stack.ds.manager, {
            workspaceUuid: stranger.uuid,
            resourceUuid: stranger.resourceUuid,
            vpcUuid: vpc.uuid,
          }),
        )
      ).status,
    ).toBe(422);
  });

  it('an app already in the VPC cannot join it twice (409)', async () => {
    const app = await insertApp(stack.ds, ws);
    const join = (await resolveVpcJoin(stack.ds.manager, {
      workspaceUuid: ws.uuid,
      resourceUuid: ws.resourceUuid,
      vpcUuid: vpc.uuid,
    }))!;
    await recordVpcJoin(stack.ds.manager, join, app);
    expect((await problemOf(() => recordVpcJoin(stack.ds.manager, join, app))).status).toBe(409);
  });
});

const appState = async (uuid: string) =>
  (await stack.http.get(`/api/v1/apps/${uuid}`).set(auth(ws.ownerToken))).body.state;
const inState = (uuid: string, state: string) =>
  eventually(async () => (await appState(uuid)) === state, { what: `app ${uuid} ${state}`, timeoutMs: 30_000 });
const setState = (uuid: string, action: string) =>
  stack.http.patch(`/api/v1/apps/${uuid}/state`).set(auth(ws.ownerToken)).send({ action }).expect(202);

/** What the (simulated) data plane has plugged into a VPC for a workload. */
const pluggedIn = (workloadUuid: string) =>
  stack.ds.query(
    `SELECT attachment_uuid, vpc_uuid, workload_type, subnet_cidr::text, host(address) AS address, fqdn FROM sim_network_attachments WHERE workload_uuid = $1`,
    [workloadUuid],
  );

/** The app's attachment as GET /vpcs/{uuid}/attachments shows it. */
async function attachmentOf(appUuid: string): Promise<any> {
  const list = (await stack.http.get(`/api/v1/vpcs/${vpc.uuid}/attachments`).set(auth(ws.ownerToken))).body;
  return list.find((a: { attachable_uuid: string }) => a.attachable_uuid === appUuid);
}

describe('POST /apps joining a VPC', () => {
  it('APP-11 vpc_subnet_uuid joins the app at creation, attached, without a restart; the subnet implies its VPC', async () => {
    const res = await stack.http
      .post('/api/v1/apps')
      .set(auth(ws.ownerToken))
      .send({ name: 'joined', resource_id: ws.resourceUuid, vpc_subnet_uuid: subnet('backend') });
    expect(res.status).toBe(201);
    const [attachment] = await stack.ds.query(
      `SELECT vpc_uuid, subnet_uuid, status, attachable_type FROM vpc_attachments WHERE attachable_uuid = $1`,
      [res.body.uuid],
    );
    expect(attachment).toEqual({
      vpc_uuid: vpc.uuid,
      subnet_uuid: subnet('backend'),
      status: 'attached',
      attachable_type: 'App',
    });
    // Its provisioning plugs it into the subnet in the data plane before it starts: it runs inside the VPC.
    await inState(res.body.uuid, 'running');
    const shown = await attachmentOf(res.body.uuid);
    expect(await pluggedIn(res.body.uuid)).toEqual([
      {
        attachment_uuid: shown.uuid,
        vpc_uuid: vpc.uuid,
        workload_type: 'App',
        subnet_cidr: '10.224.2.0/24',
        address: shown.address_v4,
        fqdn: shown.fqdn,
      },
    ]);
    expect(shown.address_v4).toMatch(/^10\.224\.2\.\d+$/);
    expect(await restartsOf(stack.ds, res.body.uuid)).toEqual([]);
    const withVpcOnly = await stack.http
      .post('/api/v1/apps')
      .set(auth(ws.ownerToken))
      .send({ name: 'joined-default', resource_id: ws.resourceUuid, vpc_uuid: vpc.uuid });
    expect(withVpcOnly.status).toBe(201);
    const [other] = await stack.ds.query(`SELECT subnet_uuid FROM vpc_attachments WHERE attachable_uuid = $1`, [
      withVpcOnly.body.uuid,
    ]);
    expect(other.subnet_uuid).toBe(subnet('default'));
    await inState(withVpcOnly.body.uuid, 'running');
    expect(await pluggedIn(withVpcOnly.body.uuid)).toMatchObject([
      { vpc_uuid: vpc.uuid, subnet_cidr: '10.224.1.0/24' },
    ]);
    expect(await restartsOf(stack.ds, withVpcOnly.body.uuid)).toEqual([]);
  });

  it('APP-11 provisioning again (stop, then start) plugs the app in once: the same attachment and address, still no restart', async () => {
    const res = await stack.http
      .post('/api/v1/apps')
      .set(auth(ws.ownerToken))
      .send({ name: 'joined-again', resource_id: ws.resourceUuid, vpc_subnet_uuid: subnet('backend') });
    expect(res.status).toBe(201);
    await inState(res.body.uuid, 'running');
    const first = await pluggedIn(res.body.uuid);
    expect(first).toHaveLength(1);
    await setState(res.body.uuid, 'stop');
    await inState(res.body.uuid, 'stopped');
    await setState(res.body.uuid, 'start');
    await inState(res.body.uuid, 'running');
    expect(await pluggedIn(res.body.uuid)).toEqual(first);
    expect(await restartsOf(stack.ds, res.body.uuid)).toEqual([]);
  });

  it('APP-11 when the driver cannot plug the new app into its VPC, its provisioning fails (failed); a transient fault is retried', async () => {
    await SimulatedCore.injectFault(stack.ds, 'network.attach', 1, {
      retryable: false,
      message: 'no port left on the VPC switch',
    });
    const res = await stack.http
      .post('/api/v1/apps')
      .set(auth(ws.ownerToken))
      .send({ name: 'unplugged', resource_id: ws.resourceUuid, vpc_uuid: vpc.uuid });
    expect(res.status).toBe(201);
    await inState(res.body.uuid, 'failed');
    expect(await pluggedIn(res.body.uuid)).toEqual([]);
    expect(
      (await stack.ds.query(`SELECT status FROM sim_apps WHERE app_uuid = $1`, [res.body.uuid]))[0]?.status,
    ).not.toBe('running');
    // A transient fault is retried by the activity: the app comes up plugged in once.
    await SimulatedCore.injectFault(stack.ds, 'network.attach', 2, { retryable: true });
    const retried = await stack.http
      .post('/api/v1/apps')
      .set(auth(ws.ownerToken))
      .send({ name: 'retried', resource_id: ws.resourceUuid, vpc_uuid: vpc.uuid });
    expect(retried.status).toBe(201);
    await inState(retried.body.uuid, 'running');
    expect(await stack.ds.query(`SELECT remaining FROM sim_faults WHERE operation = 'network.attach'`)).toEqual([
      { remaining: 0 },
    ]);
    expect(await pluggedIn(retried.body.uuid)).toHaveLength(1);
    expect(await restartsOf(stack.ds, retried.body.uuid)).toEqual([]);
  });

  it('APP-12 a VPC in another region than resource_id gets 422 and nothing is written', async () => {
    const [{ id }] = await stack.ds.query(
      `INSERT INTO regions (name, code, domain) VALUES ('Far', 'far-join', 'far.berth.localhost') RETURNING id`,
    );
    const far = await createResource(stack.ds, ws.uuid, id, 'far-join-1');
    const before = await stack.ds.query(`SELECT count(*)::int AS n FROM apps`);
    const res = await stack.http
      .post('/api/v1/apps')
      .set(auth(ws.ownerToken))
      .send({ name: 'faraway', resource_id: far, vpc_uuid: vpc.uuid });
    expect(res.status).toBe(422);
    expect(await stack.ds.query(`SELECT count(*)::int AS n FROM apps`)).toEqual(before);
    const mismatch = await stack.http
      .post('/api/v1/apps')
      .set(auth(ws.ownerToken))
      .send({
        name: 'mismatch',
        resource_id: ws.resourceUuid,
        vpc_uuid: randomUUID(),
        vpc_subnet_uuid: subnet('backend'),
      });
    expect(mismatch.status).toBe(422);
  });
});

describe('deleting an app', () => {
  it('ATT-03 removes its VPC attachments (unplugged, no restart) and its add-ons along with it', async () => {
    const res = await stack.http
      .post('/api/v1/apps')
      .set(auth(ws.ownerToken))
      .send({ name: 'leaving', resource_id: ws.resourceUuid, vpc_uuid: vpc.uuid });
    expect(res.status).toBe(201);
    const [addon] = await stack.ds.query(
      `INSERT INTO addons (uuid, workspace_uuid, kind, app_uuid, resource_uuid, type, name, label, state)
       VALUES (gen_random_uuid(), $1, 'addon', $2, $3, 'valkey', 'leaving-cache', 'cache', 'healthy') RETURNING uuid`,
      [ws.uuid, res.body.uuid, ws.resourceUuid],
    );
    await stack.http.delete(`/api/v1/apps/${res.body.uuid}`).set(auth(ws.ownerToken)).expect(202);
    const handle = stack.temporal.workflow.getHandle(`app-delete/${res.body.uuid}`);
    await eventually(async () => (await handle.describe().catch(() => null))?.status.name === 'COMPLETED', {
      what: 'app deleted',
      timeoutMs: 30_000,
    });
    expect(await stack.ds.query(`SELECT 1 FROM vpc_attachments WHERE attachable_uuid = $1`, [res.body.uuid])).toEqual(
      [],
    );
    expect(await stack.ds.query(`SELECT 1 FROM addons WHERE uuid = $1`, [addon.uuid])).toEqual([]);
    expect(await stack.ds.query(`SELECT 1 FROM apps WHERE uuid = $1`, [res.body.uuid])).toEqual([]);
    expect(await restartsOf(stack.ds, res.body.uuid)).toEqual([]);
  });
});
