import { createActivities } from '../../../activities';
import { insertApp } from '../../support/data';
import { seedWorkspace } from '../../support/fixtures';
import { eventually, type TestStack } from '../../support/stack';
import type { ReplayScenario } from './types';

async function setup(stack: TestStack) {
  const ws = await seedWorkspace(stack.ds);
  const app = await insertApp(stack.ds, ws);
  return { ws, app, auth: { Authorization: `Bearer ${ws.ownerToken}` } };
}
async function completed(stack: TestStack, workflowId: string) {
  const handle = stack.temporal.workflow.getHandle(workflowId);
  await eventually(async () => (await handle.describe()).status.name === 'COMPLETED', {
    what: `${workflowId} completed`,
  });
  return handle.fetchHistory();
}
async function liveAddon(stack: TestStack, app: string, auth: Record<string, string>, body: Record<string, unknown>) {
  const res = await stack.http.post(`/api/v1/apps/${app}/addons`).set(auth).send(body).expect(201);
  await completed(stack, `addon-provision/${res.body.uuid}`);
  return res.body.uuid as string;
}

export const dataScenarios: ReplayScenario[] = [
  {
    name: 'addon-health-sweep',
    async record(stack) {
      const { app, auth } = await setup(stack);
      await liveAddon(stack, app, auth, { type: 'valkey' });
      const schedule = stack.temporal.schedule.getHandle(`addon-health/${stack.taskQueue}`);
      const before = (await schedule.describe()).info.recentActions.length;
      await schedule.trigger();
      const runId = await eventually(
        async () => {
          const actions = (await schedule.describe()).info.recentActions;
          return actions.length > before ? actions[actions.length - 1]!.action.workflow.workflowId : null;
        },
        { what: 'a sweep' },
      );
      const history = await completed(stack, runId);
      await schedule.delete();
      return history;
    },
  },
  {
    name: 'addon-provision',
    async record(stack) {
      const { app, auth } = await setup(stack);
      const core = stack.activityDeps.provider.core!;
      core.options.latencyMs = 1500; // the cluster takes a moment: the history holds the polling timer
      try {
        const res = await stack.http
          .post(`/api/v1/apps/${app}/addons`)
          .set(auth)
          .send({ type: 'storage', sub_path: 'media' })
          .expect(201);
        return await completed(stack, `addon-provision/${res.body.uuid}`);
      } finally {
        core.options.latencyMs = 0;
      }
    },
  },
  {
    name: 'addon-replica',
    async record(stack) {
      const { app, auth } = await setup(stack);
      const primary = await liveAddon(stack, app, auth, { type: 'postgres', public_access: true });
      const res = await stack.http
        .post(`/api/v1/apps/${app}/addons/${primary}/create_replica`)
        .set(auth)
        .send({ cpu_size: 1, ram_size: 1073741824 })
        .expect(201);
      return completed(stack, `addon-replica/${res.body.uuid}`);
    },
  },
  {
    name: 'addon-restore',
    async record(stack) {
      const { app, auth } = await setup(stack);
      const id = await liveAddon(stack, app, auth, { type: 'postgres', backup_enabled: true });
      await createActivities(stack.activityDeps).takeAddonBackup(id);
      await stack.http
        .post(`/api/v1/apps/${app}/addons/${id}/restore_backup`)
        .set(auth)
        .send({ to_new_cluster: true })
        .expect(202);
      return completed(stack, `addon-restore/${id}`);
    },
  },
  {
    name: 'addon-sync',
    async record(stack) {
      const { app, auth } = await setup(stack);
      const id = await liveAddon(stack, app, auth, { type: 'postgres' });
      await stack.http
        .put(`/api/v1/apps/${app}/addons/${id}`)
        .set(auth)
        .send({ backup_enabled: true, public_access: true })
        .expect(200);
      return completed(stack, `addon-sync/${id}/1`);
    },
  },
  {
    name: 'addon-destroy',
    async record(stack) {
      const { app, auth } = await setup(stack);
      const id = await liveAddon(stack, app, auth, { type: 'mysql' });
      await stack.http.post(`/api/v1/apps/${app}/addons/${id}/reset_database`).set(auth).expect(202);
      return completed(stack, `addon-reset/${id}`);
    },
  },
  {
    name: 'cronjob-sync',
    async record(stack) {
      const { app, auth } = await setup(stack);
      const res = await stack.http
        .post(`/api/v1/apps/${app}/cronjobs`)
        .set(auth)
        .send({ label: 'tick', command: 'echo tick', schedule_type: 'cron', cron: '0 * * * *' })
        .expect(201);
      const history = await completed(stack, `cronjob-sync/${res.body.uuid}/0`);
      await stack.http.delete(`/api/v1/apps/${app}/cronjobs/${res.body.uuid}`).set(auth).expect(202);
      await completed(stack, `cronjob-sync/${res.body.uuid}/1`);
      return history;
    },
  },
  {
    name: 'cronjob-run',
    async record(stack) {
      const { app, auth } = await setup(stack);
      const res = await stack.http
        .post(`/api/v1/apps/${app}/cronjobs`)
        .set(auth)
        .send({ label: 'run', command: 'echo run' })
        .expect(201);
      await completed(stack, `cronjob-sync/${res.body.uuid}/0`);
      const schedule = stack.temporal.schedule.getHandle(`cronjob/${res.body.uuid}`);
      await schedule.trigger();
      const runId = await eventually(
        async () => (await schedule.describe()).info.recentActions[0]?.action.workflow.workflowId,
        { what: 'a scheduled run' },
      );
      const history = await completed(stack, runId);
      await schedule.delete();
      return history;
    },
  },
];
