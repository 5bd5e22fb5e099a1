import { SimulatedAppsControl } from '../../../activities/provider/simulated/apps';
import { auth, appWorkflowHarness, BIG_PLAN } from '../../support/apps';
import { eagerContinueAsNew } from '../../support/eager-continue-as-new';
import { seedWorkspace, type Workspace } from '../../support/fixtures';
import { eventually, resultOnceStarted, type TestStack } from '../../support/stack';
import type { History, ReplayScenario } from './types';

async function runningApp(stack: TestStack, ws: Workspace, name: string, extra: Record<string, unknown> = {}) {
  const res = await stack.http
    .post('/api/v1/apps')
    .set(auth(ws.ownerToken))
    .send({ name, resource_id: ws.resourceUuid, ...extra })
    .expect(201);
  await eventually(
    async () =>
      (await stack.ds.query(`SELECT state FROM apps WHERE uuid = $1`, [res.body.uuid]))[0].state === 'running',
    { what: `${name} running` },
  );
  return res.body as { uuid: string; name: string };
}

async function completed(stack: TestStack, workflowId: string): Promise<History> {
  const handle = stack.temporal.workflow.getHandle(workflowId);
  await handle.result();
  return handle.fetchHistory();
}

async function deployment(
  stack: TestStack,
  name: string,
  prepare?: (appUuid: string) => Promise<void>,
  during?: (appUuid: string, d: string, ws: Workspace) => Promise<void>,
) {
  const ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
  const app = await runningApp(stack, ws, name, { deployment_method: 'cli_upload' });
  await prepare?.(app.uuid);
  const d = await stack.http.post(`/api/v1/apps/${app.uuid}/deployments`).set(auth(ws.ownerToken)).send({}).expect(202);
  await during?.(app.uuid, d.body.uuid, ws);
  return completed(stack, `app-deploy/${app.uuid}/${d.body.uuid}`);
}

export const appScenarios: ReplayScenario[] = [
  {
    name: 'app-provision-restart',
    async record(stack) {
      const ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
      const app = await runningApp(stack, ws, 'replayed');
      await stack.http
        .patch(`/api/v1/apps/${app.uuid}/state`)
        .set(auth(ws.ownerToken))
        .send({ action: 'restart' })
        .expect(202);
      await eventually(
        async () =>
          (await stack.ds.query(`SELECT count(*)::int AS n FROM events WHERE app_uuid = $1`, [app.uuid]))[0].n === 2 &&
          (await stack.ds.query(`SELECT state FROM apps WHERE uuid = $1`, [app.uuid]))[0].state === 'running',
        { what: 'restarted' },
      );
      return stack.temporal.workflow.getHandle(`app/${app.uuid}`).fetchHistory();
    },
  },
  {
    name: 'app-command',
    async record(stack) {
      const ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
      const app = await runningApp(stack, ws, 'commanded');
      await stack.http
        .patch(`/api/v1/apps/${app.uuid}/state`)
        .set(auth(ws.ownerToken))
        .send({ action: 'stop' })
        .expect(202);
      const [op] = await stack.ds.query(
        `SELECT workflow_id FROM operations WHERE workflow_type = 'appSendCommand' AND resource_uuid = $1`,
        [app.uuid],
      );
      return completed(stack, op.workflow_id);
    },
  },
  {
    // a public_git app deploys its branch head once provisioned (the repository is unreachable here: that deployment fails)
    name: 'app-initial-deployment',
    async record(stack) {
      const ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
      const app = await runningApp(stack, ws, 'initial', {
        deployment_method: 'public_git',
        deployment_config: { repository: 'https://example.invalid/acme/web.git' },
      });
      const [d] = await eventually(
        async () => {
          const found: Array<{ uuid: string }> = await stack.ds.query(
            `SELECT uuid FROM app_deployments WHERE app_uuid = $1`,
            [app.uuid],
          );
          return found.length > 0 && found;
        },
        { what: 'the deployment made at creation' },
      );
      await resultOnceStarted(stack.temporal, `app-deploy/${app.uuid}/${d!.uuid}`);
      return stack.temporal.workflow.getHandle(`app/${app.uuid}`).fetchHistory();
    },
  },
  { name: 'app-deploy-success', record: (stack) => deployment(stack, 'deployed') },
  {
    name: 'app-deploy-failure',
    record: (stack) =>
      deployment(stack, 'broken', (uuid) =>
        SimulatedAppsControl.script(stack.ds, uuid, { buildFailure: 'compilation failed' }),
      ),
  },
  {
    name: 'app-deploy-cancel',
    record: (stack) =>
      deployment(
        stack,
        'cancelled',
        (uuid) => SimulatedAppsControl.script(stack.ds, uuid, { buildHold: true }),
        async (app, d, ws) => {
          await eventually(
            async () =>
              (await stack.ds.query(`SELECT state FROM app_deployments WHERE uuid = $1`, [d]))[0].state === 'running',
            { what: 'deploying' },
          );
          await stack.http.post(`/api/v1/apps/${app}/deployments/${d}/cancel`).set(auth(ws.ownerToken)).expect(202);
        },
      ),
  },
  {
    name: 'app-clone',
    async record(stack) {
      const ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
      const app = await runningApp(stack, ws, 'original');
      const clone = await stack.http
        .post(`/api/v1/apps/${app.uuid}/clone`)
        .set(auth(ws.ownerToken))
        .send({ clone_variables: true })
        .expect(201);
      return completed(stack, `app-clone/${clone.body.uuid}`);
    },
  },
  {
    // The clone saga's add-on and cron job steps (patched in after app-clone was recorded).
    name: 'app-clone-with-addons',
    async record(stack) {
      const ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
      const app = await runningApp(stack, ws, 'stocked');
      const addon = await stack.http
        .post(`/api/v1/apps/${app.uuid}/addons`)
        .set(auth(ws.ownerToken))
        .send({ type: 'postgres', label: 'db' })
        .expect(201);
      const cron = await stack.http
        .post(`/api/v1/apps/${app.uuid}/cronjobs`)
        .set(auth(ws.ownerToken))
        .send({ label: 'tick', command: 'bin/tick' })
        .expect(201);
      const addonState = async () =>
        (await stack.ds.query(`SELECT state FROM addons WHERE uuid = $1`, [addon.body.uuid]))[0].state;
      await eventually(async () => (await addonState()) === 'healthy', { what: 'add-on healthy' });
      const clone = await stack.http
        .post(`/api/v1/apps/${app.uuid}/clone`)
        .set(auth(ws.ownerToken))
        .send({ addons: [{ uuid: addon.body.uuid, clone_data: true }], cronjobs: [cron.body.uuid] })
        .expect(201);
      return completed(stack, `app-clone/${clone.body.uuid}`);
    },
  },
  {
    name: 'app-delete',
    async record(stack) {
      const ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
      const app = await runningApp(stack, ws, 'removed');
      await stack.http.delete(`/api/v1/apps/${app.uuid}`).set(auth(ws.ownerToken)).expect(202);
      return completed(stack, `app-delete/${app.uuid}`);
    },
  },
  {
    // Thirty idle minutes need the time-skipping server (a real Temporal server implementation).
    name: 'app-sleep-wake',
    async record(stack) {
      const h = await appWorkflowHarness(stack);
      try {
        const ws = await seedWorkspace(stack.ds, { plan: { ...BIG_PLAN, plan_type: 'free' } });
        return await h.ts.withWorker(async () => {
          const res = await h.api
            .post('/api/v1/apps')
            .set(auth(ws.ownerToken))
            .send({ name: 'sleeper', resource_id: ws.resourceUuid })
            .expect(201);
          const uuid = res.body.uuid as string;
          const handle = h.ts.client.workflow.getHandle(`app/${uuid}`);
          await eventually(async () => (await handle.query<string>('state')) === 'supervising:running', {
            what: 'running',
          });
          await h.ts.env.sleep('31 minutes');
          await eventually(async () => (await handle.query<string>('state')) === 'supervising:sleeping', {
            what: 'sleeping',
          });
          await h.request(res.body.name);
          await eventually(async () => (await handle.query<string>('state')) === 'supervising:running', {
            what: 'woken',
          });
          return handle.fetchHistory();
        });
      } finally {
        await h.close();
      }
    },
  },
  {
    // A stop requested while the iteration's last step runs, on a server that suggests continue-as-new
    // after a few events: the run carries it out, then continues as new (the first run's history).
    name: 'app-continue-as-new-drained',
    async record(stack) {
      const t = await eagerContinueAsNew(stack);
      try {
        const ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
        return await t.withWorker(async () => {
          const app = await t.runningApp(ws, 'drained');
          await t.duringLastStep(app.uuid, () => t.changeState(ws, app.uuid, 'stop'));
          await t.continuedAsNew(app.uuid, app.firstRun);
          return t.handle(app.uuid, app.firstRun).fetchHistory();
        });
      } finally {
        await t.close();
      }
    },
  },
];
