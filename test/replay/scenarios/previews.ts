import { SimulatedCore } from '../../../activities/provider/simulated';
import { insertApp } from '../../support/app-rows';
import { deliver, pullRequestPayload, sha } from '../../support/code-host';
import { seedWorkspace } from '../../support/fixtures';
import { eventually } from '../../support/stack';
import type { ReplayScenario } from './types';

export const previewScenarios: ReplayScenario[] = [
  {
    // A pull request: opened (creating -> active), a new commit (updating -> active), merged (destroying -> gone).
    name: 'preview-environment',
    async record(stack) {
      const ws = await seedWorkspace(stack.ds);
      const app = await insertApp(stack.ds, ws);
      const auth = { Authorization: `Bearer ${ws.ownerToken}` };
      const config = await stack.http
        .put(`/api/v1/apps/${app.uuid}/preview_environments/config`)
        .set(auth)
        .send({ enabled: true })
        .expect(200);
      const secret: string = config.body.webhook_secret;
      const status = async (id: number) =>
        (await stack.http.get(`/api/v1/apps/${app.uuid}/preview_environments/${id}`).set(auth)).body.status;
      const opened = await deliver(
        stack,
        app.uuid,
        secret,
        'pull_request',
        pullRequestPayload({ action: 'opened', number: 1, headSha: sha() }),
      ).expect(202);
      const id: number = opened.body.preview_environment_id;
      await eventually(async () => (await status(id)) === 'active', { what: 'active' });
      await deliver(
        stack,
        app.uuid,
        secret,
        'pull_request',
        pullRequestPayload({ action: 'synchronize', number: 1, headSha: sha() }),
      ).expect(202);
      await eventually(async () => (await status(id)) === 'active', { what: 'active again' });
      await deliver(
        stack,
        app.uuid,
        secret,
        'pull_request',
        pullRequestPayload({ action: 'closed', number: 1, headSha: sha(), merged: true }),
      ).expect(202);
      const handle = stack.temporal.workflow.getHandle(`preview/${app.uuid}/pr-1`);
      await handle.result();
      return handle.fetchHistory();
    },
  },
  {
    // Deleting a parent app with an active preview environment: the environment is destroyed first.
    name: 'app-delete-with-previews',
    async record(stack) {
      const ws = await seedWorkspace(stack.ds);
      const app = await insertApp(stack.ds, ws);
      const auth = { Authorization: `Bearer ${ws.ownerToken}` };
      const config = await stack.http
        .put(`/api/v1/apps/${app.uuid}/preview_environments/config`)
        .set(auth)
        .send({ enabled: true })
        .expect(200);
      const opened = await deliver(
        stack,
        app.uuid,
        config.body.webhook_secret,
        'pull_request',
        pullRequestPayload({ action: 'opened', number: 1, headSha: sha() }),
      ).expect(202);
      const id: number = opened.body.preview_environment_id;
      await eventually(
        async () =>
          (await stack.http.get(`/api/v1/apps/${app.uuid}/preview_environments/${id}`).set(auth)).body.status ===
          'active',
        { what: 'active' },
      );
      await stack.http.delete(`/api/v1/apps/${app.uuid}`).set(auth).expect(202);
      const handle = stack.temporal.workflow.getHandle(`app-delete/${app.uuid}`);
      await handle.result();
      return handle.fetchHistory();
    },
  },
  {
    // A pull request whose build fails: creating -> failed (deploy_ended with the reason), then closed: destroying -> gone.
    name: 'preview-environment-failed',
    async record(stack) {
      const ws = await seedWorkspace(stack.ds);
      const app = await insertApp(stack.ds, ws);
      const auth = { Authorization: `Bearer ${ws.ownerToken}` };
      const config = await stack.http
        .put(`/api/v1/apps/${app.uuid}/preview_environments/config`)
        .set(auth)
        .send({ enabled: true })
        .expect(200);
      const secret: string = config.body.webhook_secret;
      await SimulatedCore.injectFault(stack.ds, 'apps.startBuild', 1, {
        retryable: false,
        message: 'build failed: exit code 1',
      });
      const opened = await deliver(
        stack,
        app.uuid,
        secret,
        'pull_request',
        pullRequestPayload({ action: 'opened', number: 1, headSha: sha() }),
      ).expect(202);
      const id: number = opened.body.preview_environment_id;
      await eventually(
        async () =>
          (await stack.http.get(`/api/v1/apps/${app.uuid}/preview_environments/${id}`).set(auth)).body.status ===
          'failed',
        { what: 'failed' },
      );
      await deliver(
        stack,
        app.uuid,
        secret,
        'pull_request',
        pullRequestPayload({ action: 'closed', number: 1, headSha: sha() }),
      ).expect(202);
      const handle = stack.temporal.workflow.getHandle(`preview/${app.uuid}/pr-1`);
      await handle.result();
      return handle.fetchHistory();
    },
  },
];
