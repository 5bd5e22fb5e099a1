import { WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy } from '@temporalio/client';
import { createActivities } from '../../activities';
import { SimulatedCore } from '../../activities/provider/simulated';
import { clusterOf, simData } from '../support/data';
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

const stateOf = async (uuid: string) =>
  (await stack.ds.query(`SELECT state FROM addons WHERE uuid = $1`, [uuid]))[0]?.state;

/** A postgres service row written by the API (its provisioning then runs on the time-skipping server). */
async function serviceRow(body: Record<string, unknown> = {}): Promise<string> {
  const res = await stack.http
    .post('/api/v1/services')
    .set({ Authorization: `Bearer ${ws.ownerToken}` })
    .send({ type: 'postgres', label: 'wf', resource_id: ws.resourceUuid, ...body });
  expect(res.status).toBe(201);
  return res.body.uuid;
}
const provision = (uuid: string) =>
  ts.client.workflow.execute('addonProvision', {
    taskQueue: ts.taskQueue,
    workflowId: `addon-provision/${uuid}`,
    args: [{ addonUuid: uuid }],
  });

describe('addonProvision workflow', () => {
  it('ADD-03 moves pending -> processing -> creating -> healthy, polling the driver with backoff while it is not ready', async () => {
    const uuid = await serviceRow();
    const seen: string[] = [await stateOf(uuid)];
    const real = createActivities({ ...stack.activityDeps, temporal: ts.client });
    let polls = 0;
    const result = await ts.withWorker(() => provision(uuid), {
      async transition(t: Parameters<typeof real.transition>[0]) {
        const r = await real.transition(t);
        seen.push(await stateOf(uuid));
        return r;
      },
      async refreshAddonStatus(id: string) {
        polls += 1;
        if (polls < 3) return { ready: false, status: 'creating' };
        const r = await real.refreshAddonStatus(id);
        seen.push(await stateOf(uuid));
        return r;
      },
    });
    expect(result).toBe('healthy');
    expect(seen).toEqual(['pending', 'processing', 'creating', 'healthy']);
    expect(polls).toBe(3);
    // Each move is in the audit log, as the service the row is (source workflow).
    const moves = await stack.ds.query(
      `SELECT action, diff FROM audit_events WHERE resource_uuid = $1 AND source = 'workflow' ORDER BY created_at`,
      [uuid],
    );
    expect(
      moves.map(
        (m: { action: string; diff: { state: { from: string; to: string } } }) =>
          `${m.action} ${m.diff.state.from}->${m.diff.state.to}`,
      ),
    ).toEqual([
      'service.state pending->processing',
      'service.state processing->creating',
      'service.state creating->healthy',
    ]);
  });
});

describe('addonRestore workflow (time-skipping)', () => {
  async function database() {
    const uuid = await serviceRow({ backup_enabled: true });
    await ts.withWorker(() => provision(uuid));
    const cluster = await clusterOf(stack.ds, uuid);
    return { uuid, cluster };
  }
  const acts = () => createActivities(stack.activityDeps);
  const restore = (uuid: string, from: unknown, toNewCluster = false) =>
    ts.client.workflow.execute('addonRestore', {
      taskQueue: ts.taskQueue,
      workflowId: `service-restore/${uuid}`,
      args: [{ addonUuid: uuid, from, toNewCluster }],
    }) as Promise<{ restored: string; targetUuid: string }>;

  it('BKP-04 restores a backup by name in place', async () => {
    const { uuid, cluster } = await database();
    await simData(stack).writeRow(cluster, 'k', 'one');
    const one = await acts().takeAddonBackup(uuid);
    await simData(stack).writeRow(cluster, 'k', 'two');
    const result = await ts.withWorker(() => restore(uuid, { backupName: one }));
    expect(result).toEqual({ restored: one, targetUuid: uuid });
    expect(await simData(stack).readRows(cluster)).toEqual({ k: 'one' });
    expect(await stateOf(uuid)).toBe('healthy');
  });

  it('BKP-05 restores to a target time', async () => {
    const { uuid, cluster } = await database();
    await simData(stack).writeRow(cluster, 'k', 'early');
    await new Promise((r) => setTimeout(r, 20));
    const t = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    await simData(stack).writeRow(cluster, 'k', 'late');
    const result = await ts.withWorker(() => restore(uuid, { targetTime: t }));
    expect(result.restored).toBe(t);
    expect(await simData(stack).readRows(cluster)).toEqual({ k: 'early' });
  });

  it('BKP-06 restores the latest backup', async () => {
    const { uuid, cluster } = await database();
    await simData(stack).writeRow(cluster, 'k', 'a');
    await acts().takeAddonBackup(uuid);
    await simData(stack).writeRow(cluster, 'k', 'b');
    const latest = await acts().takeAddonBackup(uuid);
    await simData(stack).writeRow(cluster, 'k', 'c');
    const result = await ts.withWorker(() => restore(uuid, { latest: true }));
    expect(result.restored).toBe(latest);
    expect(await simData(stack).readRows(cluster)).toEqual({ k: 'b' });
  });

  it('BKP-07 to a new cluster: the restored data lands beside the old database, which is untouched', async () => {
    const { uuid, cluster } = await database();
    await simData(stack).writeRow(cluster, 'k', 'backed-up');
    await acts().takeAddonBackup(uuid);
    await simData(stack).writeRow(cluster, 'k', 'live');
    const [before] = await stack.ds.query(`SELECT * FROM addons WHERE uuid = $1`, [uuid]);
    const rowsBefore = await stack.ds.query(
      `SELECT seq, key, value FROM sim_data_rows WHERE cluster_id = $1 ORDER BY seq`,
      [cluster],
    );
    const result = await ts.withWorker(() => restore(uuid, { latest: true }, true));
    expect(result.targetUuid).not.toBe(uuid);
    expect(
      await stack.ds.query(`SELECT seq, key, value FROM sim_data_rows WHERE cluster_id = $1 ORDER BY seq`, [cluster]),
    ).toEqual(rowsBefore);
    expect((await stack.ds.query(`SELECT * FROM addons WHERE uuid = $1`, [uuid]))[0]).toEqual(before);
    expect(await simData(stack).readRows(await clusterOf(stack.ds, result.targetUuid))).toEqual({ k: 'backed-up' });
    expect(await stateOf(result.targetUuid)).toBe('healthy');
  });

  it('BKP-07 a second concurrent restore of the same database is refused by the workflow id', async () => {
    const { uuid } = await database();
    await SimulatedCore.injectFault(stack.ds, 'data.restore', 2);
    await ts.withWorker(async () => {
      const first = await ts.client.workflow.start('addonRestore', {
        taskQueue: ts.taskQueue,
        workflowId: `service-restore/${uuid}`,
        args: [{ addonUuid: uuid, from: { latest: true }, toNewCluster: false }],
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
      });
      await expect(
        ts.client.workflow.start('addonRestore', {
          taskQueue: ts.taskQueue,
          workflowId: `service-restore/${uuid}`,
          args: [{ addonUuid: uuid, from: { latest: true }, toNewCluster: true }],
          workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
        }),
      ).rejects.toBeInstanceOf(WorkflowExecutionAlreadyStartedError);
      await first.result();
    });
    expect(await stateOf(uuid)).toBe('healthy');
  });
});
