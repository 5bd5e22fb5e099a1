import { ScheduleNotFoundError } from '@temporalio/client';
import { createActivities } from '../../activities';
import { SimulatedCore } from '../../activities/provider/simulated';
import { auth, BIG_PLAN } from '../support/apps';
import { clusterOf, simData } from '../support/data';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { eventually, startStack, type TestStack } from '../support/stack';

// Cron jobs run as Temporal Schedules, which the time-skipping server lacks: these clones
// run on the suite's real Temporal dev server.
let stack: TestStack;
let ws: Workspace;
/** Every target uuid the saga passed to cloneAddon / cloneCronjob (the real activities run). */
const cloned = { addons: [] as string[], cronjobs: [] as string[] };
/** How many status reads answer "not ready yet" before the driver is asked (the copy is still creating). */
let creatingPolls = 0;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
  const real = createActivities(stack.activityDeps);
  await stack.startWorker({
    activities: {
      async cloneAddon(input: Parameters<typeof real.cloneAddon>[0]) {
        cloned.addons.push(input.targetUuid);
        return real.cloneAddon(input);
      },
      async refreshAddonStatus(uuid: string) {
        if (creatingPolls > 0) {
          creatingPolls -= 1;
          return { ready: false, status: 'creating' };
        }
        return real.refreshAddonStatus(uuid);
      },
      async cloneCronjob(input: Parameters<typeof real.cloneCronjob>[0]) {
        cloned.cronjobs.push(input.targetUuid);
        return real.cloneCronjob(input);
      },
    },
  });
});
afterAll(() => stack?.close());

const owner = () => auth(ws.ownerToken);
const stateOf = async (uuid: string) =>
  (await stack.ds.query(`SELECT state FROM apps WHERE uuid = $1`, [uuid]))[0]?.state;

async function runningApp(name: string): Promise<string> {
  const res = await stack.http
    .post('/api/v1/apps')
    .set(owner())
    .send({ name, resource_id: ws.resourceUuid, deployment_method: 'cli_upload' });
  expect(res.status).toBe(201);
  await eventually(async () => (await stateOf(res.body.uuid)) === 'running', { what: `${name} running` });
  return res.body.uuid;
}
async function liveAddon(app: string, label: string): Promise<string> {
  const res = await stack.http.post(`/api/v1/apps/${app}/addons`).set(owner()).send({ type: 'postgres', label });
  expect(res.status).toBe(201);
  await eventually(
    async () =>
      (await stack.http.get(`/api/v1/apps/${app}/addons/${res.body.uuid}`).set(owner())).body.state === 'healthy',
    { what: `add-on ${label} healthy` },
  );
  return res.body.uuid;
}
async function cronjob(app: string): Promise<string> {
  const res = await stack.http
    .post(`/api/v1/apps/${app}/cronjobs`)
    .set(owner())
    .send({ label: 'nightly', command: 'bin/report', schedule_type: 'cron', cron: '0 3 * * *' });
  expect(res.status).toBe(201);
  await eventually(
    async () =>
      (await stack.ds.query(`SELECT state FROM addons WHERE uuid = $1`, [res.body.uuid]))[0].state === 'running',
    { what: 'cron job scheduled' },
  );
  return res.body.uuid;
}
async function scheduleOf(cronjobUuid: string) {
  try {
    return await stack.temporal.schedule.getHandle(`cronjob/${cronjobUuid}`).describe();
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return null;
    throw err;
  }
}
/** A source app with two postgres add-ons (rows written into the first) and a cron job. */
async function source(name: string) {
  const app = await runningApp(name);
  const [withData, empty] = [await liveAddon(app, 'orders'), await liveAddon(app, 'cache')];
  await simData(stack).writeRow(await clusterOf(stack.ds, withData), 'order:1', 'paid');
  await simData(stack).writeRow(await clusterOf(stack.ds, withData), 'order:2', 'shipped');
  await simData(stack).writeRow(await clusterOf(stack.ds, empty), 'session:9', 'x');
  return { app, withData, empty, cron: await cronjob(app) };
}
const snapshot = async (app: string) => ({
  app: (await stack.ds.query(`SELECT * FROM apps WHERE uuid = $1`, [app]))[0],
  addons: await stack.ds.query(`SELECT * FROM addons WHERE app_uuid = $1 ORDER BY uuid`, [app]),
});

describe('clone with add-ons and cron jobs', () => {
  it('CLN-02 CLN-03 copies a postgres add-on with its rows (clone_data true), one empty (clone_data false), and a cron job with its own Schedule', async () => {
    const src = await source('cloneme');
    const srcRows = await simData(stack).readRows(await clusterOf(stack.ds, src.withData));
    creatingPolls = 2;
    const res = await stack.http
      .post(`/api/v1/apps/${src.app}/clone`)
      .set(owner())
      .send({ addons: [{ uuid: src.withData, clone_data: true }, { uuid: src.empty }], cronjobs: [src.cron] });
    expect(res.status).toBe(201);
    expect(res.body.state).toBe('cloning');
    const clone = res.body.uuid as string;
    expect(await stack.temporal.workflow.getHandle(`app-clone/${clone}`).result()).toEqual({
      outcome: 'cloned',
      reason: null,
    });
    await eventually(async () => (await stateOf(clone)) === 'running', { what: 'clone running' });
    // a copy starts creating: the saga read its status until ready, sleeping between reads
    const history = await stack.temporal.workflow.getHandle(`app-clone/${clone}`).fetchHistory();
    const scheduled = (history.events ?? []).flatMap((e) =>
      e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : [],
    );
    expect(scheduled.filter((n) => n === 'refreshAddonStatus')).toHaveLength(4);
    expect((history.events ?? []).filter((e) => e.timerStartedEventAttributes)).toHaveLength(2);
    expect(creatingPolls).toBe(0);

    const addons = (await stack.http.get(`/api/v1/apps/${clone}/addons`).set(owner())).body as Array<
      Record<string, any>
    >;
    expect(addons.map((a) => [a.label, a.type, a.state]).sort()).toEqual([
      ['cache', 'postgres', 'healthy'],
      ['orders', 'postgres', 'healthy'],
    ]);
    const copyOf = (label: string) => addons.find((a) => a.label === label)!.uuid as string;
    for (const a of addons) expect([src.withData, src.empty]).not.toContain(a.uuid);
    // clone_data true: the copy's database holds the source's rows; clone_data false (the default): empty
    expect(await simData(stack).readRows(await clusterOf(stack.ds, copyOf('orders')))).toEqual(srcRows);
    expect(srcRows).toEqual({ 'order:1': 'paid', 'order:2': 'shipped' });
    expect(await simData(stack).readRows(await clusterOf(stack.ds, copyOf('cache')))).toEqual({});
    // the copies are independent clusters: a write to the copy leaves the source alone
    await simData(stack).writeRow(await clusterOf(stack.ds, copyOf('orders')), 'order:3', 'new');
    expect(await simData(stack).readRows(await clusterOf(stack.ds, src.withData))).toEqual(srcRows);

    // the cron job: a copy on the clone with the source's settings, and its own Temporal Schedule
    const jobs = (await stack.http.get(`/api/v1/apps/${clone}/cronjobs`).set(owner())).body as Array<
      Record<string, any>
    >;
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.uuid).not.toBe(src.cron);
    expect(jobs[0]).toMatchObject({
      label: 'nightly',
      settings: { schedule_type: 'cron', cron: '0 3 * * *', command: 'bin/report' },
    });
    const schedule = await scheduleOf(jobs[0]!.uuid);
    // the server keeps a cron expression as calendars: 03:00 every day
    expect(schedule?.spec.calendars).toEqual((await scheduleOf(src.cron))!.spec.calendars);
    expect(schedule?.spec.calendars?.[0]).toMatchObject({
      hour: [{ start: 3, end: 3, step: 1 }],
      minute: [{ start: 0, end: 0, step: 1 }],
    });
    expect(schedule?.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'cronjobRun',
      args: [{ cronjobUuid: jobs[0]!.uuid }],
    });
    expect(await scheduleOf(src.cron)).not.toBeNull();
    // the source keeps its own add-ons and cron job
    expect(
      (await stack.http.get(`/api/v1/apps/${src.app}/addons`).set(owner())).body.map((a: any) => a.uuid).sort(),
    ).toEqual([src.withData, src.empty].sort());
  });

  it('CLN-02 CLN-03 refuses (422, naming them, nothing written) add-ons or cron jobs of another app, and a cron job listed as an add-on or the reverse', async () => {
    const mine = await runningApp('mine');
    const other = await runningApp('other');
    const [myAddon, myCron, theirAddon, theirCron] = [
      await liveAddon(mine, 'db'),
      await cronjob(mine),
      await liveAddon(other, 'db'),
      await cronjob(other),
    ];
    const apps = (await stack.ds.query(`SELECT count(*)::int AS n FROM apps`))[0].n;
    const cases: Array<[Record<string, unknown>, string[]]> = [
      [{ addons: [{ uuid: theirAddon }], cronjobs: [myCron] }, [theirAddon]],
      [{ addons: [{ uuid: myAddon }], cronjobs: [theirCron] }, [theirCron]],
      [{ addons: [{ uuid: myCron, clone_data: true }] }, [myCron]],
      [{ cronjobs: [myAddon] }, [myAddon]],
    ];
    for (const [body, named] of cases) {
      const res = await stack.http.post(`/api/v1/apps/${mine}/clone`).set(owner()).send(body);
      expect(res.status).toBe(422);
      for (const u of named) expect(res.body.detail).toContain(u);
      for (const u of [myAddon, myCron, theirAddon, theirCron].filter((x) => !named.includes(x)))
        expect(res.body.detail).not.toContain(u);
    }
    expect((await stack.ds.query(`SELECT count(*)::int AS n FROM apps`))[0].n).toBe(apps);
  });

  for (const [step, where] of [
    ['data.provision', 'cloning the second add-on'],
    ['apps.start', 'starting, after the add-ons and cron job were cloned'],
  ] as const) {
    it(`CLN-01 CLN-02 CLN-03 the saga undoes itself when the driver fails ${where}: no cloned add-on, cron job, schedule or app remains; the source is untouched`, async () => {
      const src = await source(`undo${step === 'apps.start' ? 'late' : 'early'}`);
      const before = await snapshot(src.app);
      const sourceRows = await simData(stack).readRows(await clusterOf(stack.ds, src.withData));
      const apps = (await stack.ds.query(`SELECT count(*)::int AS n FROM apps`))[0].n;
      cloned.addons.length = 0;
      cloned.cronjobs.length = 0;
      // the first add-on is restored from a backup (no provision); the second is provisioned empty
      await SimulatedCore.injectFault(stack.ds, step, 1, { retryable: false, message: `${step} broke` });
      const res = await stack.http
        .post(`/api/v1/apps/${src.app}/clone`)
        .set(owner())
        .send({
          addons: [
            { uuid: src.withData, clone_data: true },
            { uuid: src.empty, clone_data: false },
          ],
          cronjobs: [src.cron],
        });
      expect(res.status).toBe(201);
      const target = res.body.uuid as string;
      expect(await stack.temporal.workflow.getHandle(`app-clone/${target}`).result()).toEqual({
        outcome: 'failed',
        reason: `${step} broke`,
      });
      await SimulatedCore.clearFaults(stack.ds);

      expect(cloned.addons).toHaveLength(2);
      expect(cloned.cronjobs).toHaveLength(step === 'apps.start' ? 1 : 0);
      for (const copy of [...cloned.addons, ...cloned.cronjobs]) {
        expect((await stack.ds.query(`SELECT count(*)::int AS n FROM addons WHERE uuid = $1`, [copy]))[0].n).toBe(0);
        expect(
          (await stack.ds.query(`SELECT count(*)::int AS n FROM sim_data_clusters WHERE id = $1`, [`c-${copy}`]))[0].n,
        ).toBe(0);
      }
      for (const copy of cloned.cronjobs) expect(await scheduleOf(copy)).toBeNull();
      expect((await stack.ds.query(`SELECT count(*)::int AS n FROM addons WHERE app_uuid = $1`, [target]))[0].n).toBe(
        0,
      );
      expect((await stack.ds.query(`SELECT count(*)::int AS n FROM apps`))[0].n).toBe(apps);
      expect((await stack.http.get(`/api/v1/apps/${target}`).set(owner())).status).toBe(404);
      // the source: same rows, same add-ons and cron job, same data, its schedule still there
      const after = await snapshot(src.app);
      expect(after.addons.map((a: any) => [a.uuid, a.state, a.cluster_id])).toEqual(
        before.addons.map((a: any) => [a.uuid, a.state, a.cluster_id]),
      );
      expect(after.app).toEqual(before.app);
      expect(await simData(stack).readRows(await clusterOf(stack.ds, src.withData))).toEqual(sourceRows);
      expect(await scheduleOf(src.cron)).not.toBeNull();
    });
  }

  it('CLN-01 one compensation that fails does not skip the others: the volume drop refuses, the cloned add-on, the workload and the app still go', async () => {
    const app = await runningApp('undoguarded');
    const addon = await liveAddon(app, 'ledger');
    const apps = (await stack.ds.query(`SELECT count(*)::int AS n FROM apps`))[0].n;
    cloned.addons.length = 0;
    await SimulatedCore.injectFault(stack.ds, 'apps.start', 1, { retryable: false, message: 'apps.start broke' });
    await SimulatedCore.injectFault(stack.ds, 'apps.dropVolume', 1, {
      retryable: false,
      message: 'apps.dropVolume broke',
    });
    const res = await stack.http
      .post(`/api/v1/apps/${app}/clone`)
      .set(owner())
      .send({ addons: [{ uuid: addon, clone_data: false }], cronjobs: [] });
    expect(res.status).toBe(201);
    const target = res.body.uuid as string;
    expect(await stack.temporal.workflow.getHandle(`app-clone/${target}`).result()).toEqual({
      outcome: 'failed',
      reason: 'apps.start broke',
    });
    await SimulatedCore.clearFaults(stack.ds);
    expect(cloned.addons).toHaveLength(1);
    expect(
      (await stack.ds.query(`SELECT count(*)::int AS n FROM addons WHERE uuid = $1`, [cloned.addons[0]]))[0].n,
    ).toBe(0);
    expect((await stack.ds.query(`SELECT count(*)::int AS n FROM apps`))[0].n).toBe(apps);
    expect((await stack.http.get(`/api/v1/apps/${target}`).set(owner())).status).toBe(404);
  });
});
