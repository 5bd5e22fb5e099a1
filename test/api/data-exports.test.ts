import { randomUUID } from 'node:crypto';
import { ScheduleNotFoundError } from '@temporalio/client';
import { createActivities } from '../../activities';
import { lookupAttachableAddons } from '../../api/views/addons';
import { clusterOf, insertApp, simData } from '../support/data';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { eventually, startStack, type TestStack } from '../support/stack';

/** What other areas call: the apps clone saga's activities and the VPC attachments' lookup. */
let stack: TestStack;
let ws: Workspace;
let appUuid: string;
const owner = () => ({ Authorization: `Bearer ${ws.ownerToken}` });

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
  appUuid = await insertApp(stack.ds, ws);
  await stack.startWorker();
});
afterAll(() => stack.close());

async function liveAddon(body: Record<string, unknown>) {
  const res = await stack.http.post(`/api/v1/apps/${appUuid}/addons`).set(owner()).send(body);
  await eventually(
    async () =>
      /^(healthy|bound)$/.test(
        (await stack.http.get(`/api/v1/apps/${appUuid}/addons/${res.body.uuid}`).set(owner())).body.state,
      ),
    { what: 'live' },
  );
  return res.body.uuid as string;
}

describe('clone activities for the apps clone saga', () => {
  it('cloneAddon copies an add-on with its data (new credentials, new cluster) or without; dropClonedAddon undoes it', async () => {
    const acts = createActivities(stack.activityDeps);
    const source = await liveAddon({ type: 'postgres' });
    await simData(stack).writeRow(await clusterOf(stack.ds, source), 'orders/1', 'paid');
    const target = await insertApp(stack.ds, ws);
    const withData = randomUUID();
    await acts.cloneAddon({ sourceUuid: source, targetAppUuid: target, targetUuid: withData, withData: true });
    await acts.cloneAddon({ sourceUuid: source, targetAppUuid: target, targetUuid: withData, withData: true }); // idempotent
    await acts.refreshAddonStatus(withData);
    expect(await simData(stack).readRows(await clusterOf(stack.ds, withData))).toEqual({ 'orders/1': 'paid' });
    const empty = randomUUID();
    await acts.cloneAddon({ sourceUuid: source, targetAppUuid: target, targetUuid: empty, withData: false });
    expect(await simData(stack).readRows(await clusterOf(stack.ds, empty))).toEqual({});
    const list = await stack.http.get(`/api/v1/apps/${target}/addons`).set(owner());
    expect(list.body.map((a: { uuid: string }) => a.uuid).sort()).toEqual([withData, empty].sort());
    const src = await stack.http.get(`/api/v1/apps/${appUuid}/addons/${source}`).set(owner());
    const copy = list.body.find((a: { uuid: string }) => a.uuid === withData);
    expect(copy.connection_details.internal.password).not.toBe(src.body.connection_details.internal.password);
    const cluster = await clusterOf(stack.ds, withData);
    await acts.dropClonedAddon(withData);
    expect(await stack.ds.query(`SELECT 1 FROM addons WHERE uuid = $1`, [withData])).toHaveLength(0);
    expect(await stack.ds.query(`SELECT 1 FROM sim_data_clusters WHERE id = $1`, [cluster])).toHaveLength(0);
    await acts.dropClonedAddon(withData); // idempotent
  });

  it('cloneCronjob copies a cron job with its Temporal Schedule; dropClonedCronjob removes both', async () => {
    const acts = createActivities(stack.activityDeps);
    const job = await stack.http
      .post(`/api/v1/apps/${appUuid}/cronjobs`)
      .set(owner())
      .send({ label: 'j', command: 'echo j', interval: 15 });
    const target = await insertApp(stack.ds, ws);
    const copy = randomUUID();
    await acts.cloneCronjob({ sourceUuid: job.body.uuid, targetAppUuid: target, targetUuid: copy });
    const shown = await stack.http.get(`/api/v1/apps/${target}/cronjobs/${copy}`).set(owner());
    expect(shown.body).toMatchObject({
      type: 'cronjob',
      label: 'j',
      state: 'running',
      settings: { schedule_type: 'interval', interval: 15, command: 'echo j' },
    });
    expect((await stack.temporal.schedule.getHandle(`cronjob/${copy}`).describe()).spec.intervals?.[0]?.every).toBe(
      900000,
    );
    await acts.dropClonedCronjob(copy);
    await expect(stack.temporal.schedule.getHandle(`cronjob/${copy}`).describe()).rejects.toBeInstanceOf(
      ScheduleNotFoundError,
    );
    expect(await stack.ds.query(`SELECT 1 FROM addons WHERE uuid = $1`, [copy])).toHaveLength(0);
  });
});

describe('deleteAppAddons for the app deletion saga', () => {
  it('ADD-11 deletes every add-on (clusters and data) and cron job (schedules) of an app', async () => {
    const acts = createActivities(stack.activityDeps);
    const app = await insertApp(stack.ds, ws);
    const res = await stack.http.post(`/api/v1/apps/${app}/addons`).set(owner()).send({ type: 'postgres' });
    await eventually(
      async () =>
        (await stack.http.get(`/api/v1/apps/${app}/addons/${res.body.uuid}`).set(owner())).body.state === 'healthy',
      { what: 'live' },
    );
    const cluster = await clusterOf(stack.ds, res.body.uuid);
    await simData(stack).writeRow(cluster, 'k', 'v');
    const job = await stack.http.post(`/api/v1/apps/${app}/cronjobs`).set(owner()).send({ label: 'j', command: 'x' });
    await eventually(
      async () =>
        (await stack.ds.query(`SELECT state FROM addons WHERE uuid = $1`, [job.body.uuid]))[0]?.state === 'running',
      { what: 'scheduled' },
    );
    expect(await acts.deleteAppAddons(app)).toBe(2);
    expect(await stack.ds.query(`SELECT 1 FROM addons WHERE app_uuid = $1`, [app])).toHaveLength(0);
    expect(await stack.ds.query(`SELECT 1 FROM sim_data_rows WHERE cluster_id = $1`, [cluster])).toHaveLength(0);
    await expect(stack.temporal.schedule.getHandle(`cronjob/${job.body.uuid}`).describe()).rejects.toBeInstanceOf(
      ScheduleNotFoundError,
    );
    expect(await acts.deleteAppAddons(app)).toBe(0);
  });
});

describe('lookupAttachableAddons for VPC attachments', () => {
  it('answers workspace, region (through the compute resource) and fqdn of add-ons and services; none for cron jobs', async () => {
    const a = await liveAddon({ type: 'valkey' });
    const svc = await stack.http
      .post('/api/v1/services')
      .set(owner())
      .send({ type: 'postgres', label: 's', resource_id: ws.resourceUuid });
    const job = await stack.http
      .post(`/api/v1/apps/${appUuid}/cronjobs`)
      .set(owner())
      .send({ label: 'j', command: 'x' });
    const found = await lookupAttachableAddons(stack.ds, [a, svc.body.uuid, job.body.uuid, randomUUID()]);
    expect(found.size).toBe(3);
    expect(found.get(a)).toMatchObject({
      kind: 'addon',
      workspaceUuid: ws.uuid,
      regionId: ws.regionId,
      fqdn: expect.stringMatching(/^valkey-[0-9a-f]{8}\.internal$/),
    });
    expect(found.get(svc.body.uuid)).toMatchObject({ kind: 'service', workspaceUuid: ws.uuid, regionId: ws.regionId });
    expect(found.get(job.body.uuid)!.fqdn).toBeNull();
  });
});
