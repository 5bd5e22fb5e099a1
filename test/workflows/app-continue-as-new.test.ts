import { healthSignal } from '../../workflows/app-steps';
import { BIG_PLAN } from '../support/apps';
import { eagerContinueAsNew } from '../support/eager-continue-as-new';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { eventually, startStack, type TestStack } from '../support/stack';

/**
 * The app workflow continues as new once the server suggests it (here after a few events, so
 * at the end of every iteration of its loop). A signal that arrives while the iteration's last
 * step runs, after the queues were drained, must still be handled: by this run before it
 * continues as new, never dropped with the run's memory.
 */
let stack: TestStack;
let t: Awaited<ReturnType<typeof eagerContinueAsNew>>;
let ws: Workspace;

beforeAll(async () => {
  stack = await startStack();
  t = await eagerContinueAsNew(stack);
  ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
});
afterAll(async () => {
  await t?.close();
  await stack?.close();
});

const until = (what: string, check: () => Promise<boolean>) => eventually(check, { what, timeoutMs: 30_000 });
const state = async (uuid: string) =>
  (await stack.ds.query(`SELECT state FROM apps WHERE uuid = $1`, [uuid]))[0]?.state as string | undefined;

describe('app workflow continue-as-new', () => {
  it('a state change requested during the last step of an iteration is carried out, not lost with the run', async () => {
    await t.withWorker(async () => {
      const app = await t.runningApp(ws, 'last-iteration-command');
      // delivered to the run whose iteration is at its last step
      await t.duringLastStep(app.uuid, () => t.changeState(ws, app.uuid, 'stop'));
      await until('the stop carried out', async () => (await state(app.uuid)) === 'stopped');
      await t.continuedAsNew(app.uuid, app.firstRun);
      // the new run reads the app as it is
      await until(
        'the new run supervising stopped',
        async () => (await t.handle(app.uuid).query<string>('state')) === 'supervising:stopped',
      );
    });
  });

  it('APP-14 a health event reported during the last step of an iteration moves the app and is emitted', async () => {
    await t.withWorker(async () => {
      const app = await t.runningApp(ws, 'last-iteration-health');
      await t.duringLastStep(app.uuid, () =>
        t.handle(app.uuid).signal(healthSignal, { event: 'app_unhealthy', detail: 'readiness probe failed' }),
      );
      await until('the health event handled', async () => (await state(app.uuid)) === 'problem');
      const events = await eventually(
        async () => {
          const r = await stack.ds.query(`SELECT type, payload FROM events WHERE app_uuid = $1`, [app.uuid]);
          return r.length > 0 && r;
        },
        { what: 'the app_unhealthy event', timeoutMs: 30_000 },
      );
      expect(events.map((e: { type: string }) => e.type)).toEqual(['app_unhealthy']);
      expect(events[0].payload.data.message).toBe('readiness probe failed');
      await t.continuedAsNew(app.uuid, app.firstRun);
    });
  });
});
