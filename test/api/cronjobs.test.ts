import { randomUUID } from 'node:crypto';
import { ScheduleNotFoundError } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities';
import { insertApp } from '../support/data';
import { seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { eventually, startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let ws: Workspace;
let appUuid: string;
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });
const owner = () => auth(ws.ownerToken);
const jobs = () => `/api/v1/apps/${appUuid}/cronjobs`;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
  appUuid = await insertApp(stack.ds, ws);
  await stack.startWorker();
});
afterAll(() => stack.close());

async function schedule(uuid: string) {
  return eventually(
    async () => {
      try {
        return await stack.temporal.schedule.getHandle(`cronjob/${uuid}`).describe();
      } catch {
        return null;
      }
    },
    { what: `schedule cronjob/${uuid}` },
  );
}

describe('cron jobs', () => {
  it('CRN-01 label and command are required', async () => {
    for (const body of [{ command: 'x' }, { label: 'x' }, {}]) {
      const res = await stack.http.post(jobs()).set(owner()).send(body);
      expect(res.status).toBe(400);
      expect(res.body.detail).toMatch(/(label|command) is required/);
    }
    expect(await stack.ds.query(`SELECT 1 FROM addons WHERE type = 'cronjob'`)).toHaveLength(0);
  });

  it('CRN-02 cron is required when schedule_type is cron, and must be a valid 5-field expression', async () => {
    const missing = await stack.http
      .post(jobs())
      .set(owner())
      .send({ label: 'l', command: 'c', schedule_type: 'cron' });
    expect(missing.status).toBe(400);
    expect(missing.body.detail).toMatch(/cron is required when schedule_type is cron/);
    for (const bad of ['61 * * * *', '* * * *', '* * * * * *', 'every day']) {
      const res = await stack.http
        .post(jobs())
        .set(owner())
        .send({ label: 'l', command: 'c', schedule_type: 'cron', cron: bad });
      expect(`${bad} ${res.status}`).toBe(`${bad} 422`);
      expect(res.body.errors[0].path).toBe('body.cron');
    }
    const ok = await stack.http
      .post(jobs())
      .set(owner())
      .send({ label: 'report', command: 'bin/report', schedule_type: 'cron', cron: '*/15 3 * * 1-5' });
    expect(ok.status).toBe(201);
    expect(ok.body.settings).toEqual({ schedule_type: 'cron', cron: '*/15 3 * * 1-5', command: 'bin/report' });
    const desc = await schedule(ok.body.uuid);
    expect(desc.spec.calendars?.length ?? 0).toBeGreaterThan(0);
  });

  it('CRN-03 schedule_type defaults to interval (every `interval` minutes, default 60) and runs as a Temporal Schedule', async () => {
    const res = await stack.http.post(jobs()).set(owner()).send({ label: 'sweep', command: 'rake sweep' });
    expect(res.status).toBe(201);
    expect(res.body.settings).toEqual({ schedule_type: 'interval', interval: 60, command: 'rake sweep' });
    const desc = await schedule(res.body.uuid);
    expect(desc.spec.intervals?.map((i) => i.every)).toEqual([3600000]);
    expect(desc.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'cronjobRun',
      taskQueue: stack.taskQueue,
    });
    await eventually(
      async () => (await stack.http.get(`${jobs()}/${res.body.uuid}`).set(owner())).body.state === 'running',
      { what: 'job running' },
    );
    // update the interval: the schedule follows
    const put = await stack.http.put(`${jobs()}/${res.body.uuid}`).set(owner()).send({ interval: 5 });
    expect(put.status).toBe(200);
    await eventually(async () => (await schedule(res.body.uuid)).spec.intervals?.[0]?.every === 300000, {
      what: 'schedule updated',
    });
  });

  it('CRN-04 a name sent at creation is discarded', async () => {
    const res = await stack.http.post(jobs()).set(owner()).send({ label: 'named', command: 'true', name: 'my-name' });
    expect(res.status).toBe(201);
    expect(res.body.name).not.toBe('my-name');
    expect(res.body.name).toMatch(/^cronjob-[0-9a-f]{8}$/);
  });

  it("CRN-05 a cron job has the add-on shape; a run's log is read from the log stream; delete removes the schedule", async () => {
    const res = await stack.http.post(jobs()).set(owner()).send({ label: 'echo', command: 'echo hello' });
    for (const f of ['uuid', 'name', 'type', 'label', 'state', 'quota', 'settings', 'var', 'created_at', 'updated_at'])
      expect(res.body).toHaveProperty(f);
    expect(res.body.type).toBe('cronjob');
    const handle = stack.temporal.schedule.getHandle(`cronjob/${res.body.uuid}`);
    await schedule(res.body.uuid);
    await handle.trigger();
    const logs = await eventually(
      async () => {
        const r = await stack.http
          .get(`${jobs()}/${res.body.uuid}/logs`)
          .set(auth(await tokenWith(stack.ds, ws.uuid, ['apps:view'])));
        return r.body.length > 0 && r.body[0].finished_at ? r.body : null;
      },
      { what: 'a run logged' },
    );
    expect(logs[0]).toMatchObject({ exit_code: 0, log: expect.stringContaining('$ echo hello') });
    const operator = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    expect((await stack.http.delete(`${jobs()}/${res.body.uuid}`).set(auth(operator))).status).toBe(403);
    const del = await stack.http.delete(`${jobs()}/${res.body.uuid}`).set(owner());
    expect(del.status).toBe(202);
    expect((await stack.http.get(`${jobs()}/${res.body.uuid}`).set(owner())).status).toBe(404);
    await eventually(
      async () => {
        try {
          await handle.describe();
          return false;
        } catch (err) {
          return err instanceof ScheduleNotFoundError;
        }
      },
      { what: 'schedule deleted' },
    );
    await eventually(
      async () => (await stack.ds.query(`SELECT 1 FROM addons WHERE uuid = $1`, [res.body.uuid])).length === 0,
      { what: 'row deleted' },
    );
  });

  it('a scheduled run records one cronjob.run entry from the scheduler, with its run, in the transaction of the run', async () => {
    const res = await stack.http.post(jobs()).set(owner()).send({ label: 'audited run', command: 'echo audited' });
    expect(res.status).toBe(201);
    await schedule(res.body.uuid);
    await stack.temporal.schedule.getHandle(`cronjob/${res.body.uuid}`).trigger();
    const runs = await eventually(
      async () => {
        const r = await stack.http.get(`${jobs()}/${res.body.uuid}/logs`).set(owner());
        return r.body.length > 0 && r.body[0].finished_at ? r.body : null;
      },
      { what: 'a run logged' },
    );
    const audit = await stack.http
      .get(`/api/v1/audit_events?resource_uuid=${res.body.uuid}&action=cronjob.run`)
      .set(owner());
    expect(audit.status).toBe(200);
    expect(audit.body).toHaveLength(1);
    expect(audit.body[0]).toMatchObject({
      source: 'scheduler',
      actor: { type: 'system', uuid: null },
      action: 'cronjob.run',
      resource_type: 'cronjob',
      resource_uuid: res.body.uuid,
      diff: { run: { to: runs[0].uuid } },
      request_id: null,
    });
    const [{ workspace_uuid }] = await stack.ds.query(
      `SELECT workspace_uuid FROM audit_events WHERE action = 'cronjob.run' AND resource_uuid = $1`,
      [res.body.uuid],
    );
    expect(workspace_uuid).toBe(ws.uuid);
    await stack.http.delete(`${jobs()}/${res.body.uuid}`).set(owner()).expect(202);
  });

  it('a retried run activity finds its run: no second run, no second entry', async () => {
    const res = await stack.http.post(jobs()).set(owner()).send({ label: 'retried', command: 'echo once' });
    expect(res.status).toBe(201);
    const { runCronJob } = createActivities(stack.activityDeps);
    const execution = { workflowId: `cronjob-run/${res.body.uuid}-test`, runId: randomUUID() };
    const attempt = (n: number) =>
      new MockActivityEnvironment({ attempt: n, workflowExecution: execution }).run(runCronJob, res.body.uuid);
    expect(await attempt(1)).toBe(0);
    expect(await attempt(2)).toBe(0);
    const count = async (sql: string) => (await stack.ds.query(sql, [res.body.uuid]))[0].n;
    expect(await count(`SELECT count(*)::int AS n FROM cronjob_runs WHERE cronjob_uuid = $1`)).toBe(1);
    expect(
      await count(`SELECT count(*)::int AS n FROM audit_events WHERE resource_uuid = $1 AND action = 'cronjob.run'`),
    ).toBe(1);
    // another scheduled run is another run
    await new MockActivityEnvironment({ workflowExecution: { ...execution, runId: randomUUID() } }).run(
      runCronJob,
      res.body.uuid,
    );
    expect(await count(`SELECT count(*)::int AS n FROM cronjob_runs WHERE cronjob_uuid = $1`)).toBe(2);
    expect(
      await count(`SELECT count(*)::int AS n FROM audit_events WHERE resource_uuid = $1 AND action = 'cronjob.run'`),
    ).toBe(2);
  });
});
