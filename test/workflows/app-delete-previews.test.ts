import { randomUUID } from 'node:crypto';
import { createActivities } from '../../activities';
import { insertApp, type AppRow } from '../support/app-rows';
import { deliver, pullRequestPayload, pushPayload, sha } from '../support/code-host';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { eventually, startStack, type TestStack } from '../support/stack';

/**
 * Deleting a parent app destroys its preview environments first (their apps, their
 * workloads, their workflows), and a code-host delivery for a parent being deleted makes
 * no new preview.
 */
let stack: TestStack;
let ws: Workspace;

const auth = () => ({ Authorization: `Bearer ${ws.ownerToken}` });

beforeAll(async () => {
  stack = await startStack();
  await stack.startWorker();
  ws = await seedWorkspace(stack.ds);
});
afterAll(async () => {
  await stack?.close();
});

async function enabledApp(): Promise<{ app: AppRow; secret: string }> {
  const app = await insertApp(stack.ds, ws);
  const res = await stack.http
    .put(`/api/v1/apps/${app.uuid}/preview_environments/config`)
    .set(auth())
    .send({ enabled: true, triggers: { pull_requests: true, branch_patterns: ['staging'] } });
  expect(res.status).toBe(200);
  return { app, secret: res.body.webhook_secret };
}

async function status(app: AppRow, id: number): Promise<string | undefined> {
  return (await stack.http.get(`/api/v1/apps/${app.uuid}/preview_environments/${id}`).set(auth())).body.status;
}

async function count(sql: string, params: unknown[]): Promise<number> {
  return (await stack.ds.query(`SELECT count(*)::int AS n FROM ${sql}`, params))[0].n;
}

describe('deleting an app with preview environments', () => {
  it('destroys every preview environment (its app, its workload, its workflow) before the app is gone', async () => {
    const { app, secret } = await enabledApp();
    const pr = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'opened', number: 7, headSha: sha() }),
    ).expect(202);
    const branch = await deliver(stack, app.uuid, secret, 'push', pushPayload('staging', sha())).expect(202);
    const ids: number[] = [pr.body.preview_environment_id, branch.body.preview_environment_id];
    for (const id of ids)
      await eventually(async () => (await status(app, id)) === 'active', { what: `preview ${id} active` });
    const previews: string[] = (
      await stack.ds.query(`SELECT app_uuid FROM preview_environments WHERE parent_app_uuid = $1`, [app.uuid])
    ).map((r: { app_uuid: string }) => r.app_uuid);
    expect(previews).toHaveLength(2);
    expect(await count(`apps WHERE uuid = ANY($1::uuid[])`, [previews])).toBe(2);
    expect(await count(`sim_apps WHERE app_uuid = ANY($1::uuid[])`, [previews])).toBe(2);

    await stack.http.delete(`/api/v1/apps/${app.uuid}`).set(auth()).expect(202);
    await stack.temporal.workflow.getHandle(`app-delete/${app.uuid}`).result();

    expect(await count(`apps WHERE uuid = $1`, [app.uuid])).toBe(0);
    expect(await count(`apps WHERE uuid = ANY($1::uuid[])`, [previews])).toBe(0);
    expect(await count(`apps WHERE preview_parent_uuid = $1`, [app.uuid])).toBe(0);
    expect(await count(`sim_apps WHERE app_uuid = ANY($1::uuid[])`, [previews])).toBe(0);
    expect(await count(`preview_environments WHERE parent_app_uuid = $1`, [app.uuid])).toBe(0);
    for (const key of ['pr-7', 'branch-staging']) {
      const handle = stack.temporal.workflow.getHandle(`preview/${app.uuid}/${key}`);
      expect((await handle.describe()).status.name).toBe('COMPLETED');
      expect(await handle.result()).toBe('gone');
      // Woken, the environment's own workflow destroyed it (the path a preview deletion takes).
      const events = (await handle.fetchHistory()).events ?? [];
      expect(
        events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'destroyPreviewApp'),
      ).toHaveLength(1);
    }
    // Each environment's move to destroying is in the audit log, by the workflow, under the environment's app.
    const audited = await stack.ds.query(
      `SELECT resource_uuid, app_uuid, source, diff FROM audit_events WHERE action = 'preview.destroy' AND resource_uuid = ANY($1::uuid[]) ORDER BY created_at`,
      [previews],
    );
    expect(audited).toHaveLength(2);
    for (const a of audited) {
      expect(a).toMatchObject({ app_uuid: app.uuid, source: 'workflow' });
      expect(a.diff.status).toEqual({ from: 'active', to: 'destroying' });
    }
  });

  it('an environment whose workflow is not running is destroyed by the deletion saga itself; a retry changes nothing', async () => {
    const { app } = await enabledApp();
    // An environment written but never picked up by a workflow (its start still in the outbox), with its app made.
    const envApp = randomUUID();
    const [{ id }] = await stack.ds.query(
      `INSERT INTO preview_environments (workspace_uuid, parent_app_uuid, key, app_uuid, app_name, resource_uuid, url, branch, head_sha)
       VALUES ($1, $2, 'branch-orphan', $3, $4, $5, 'https://orphan.example.test', 'orphan', $6) RETURNING id`,
      [ws.uuid, app.uuid, envApp, `orphan-${envApp.slice(0, 6)}`, ws.resourceUuid, sha()],
    );
    const acts = createActivities(stack.activityDeps);
    expect(await acts.createPreviewApp(id)).toBe(true);
    expect(await count(`sim_apps WHERE app_uuid = $1`, [envApp])).toBe(1);
    // the made clone's move cloning -> deploying is in the audit log (source workflow)
    const made = await count(`audit_events WHERE resource_uuid = $1`, [envApp]);
    expect(made).toBe(1);

    // Not for an app that is not being deleted.
    expect(await acts.destroyAppPreviews(app.uuid)).toBe(0);
    expect(await count(`preview_environments WHERE id = $1 AND status = 'creating'`, [id])).toBe(1);

    await stack.ds.query(`UPDATE apps SET state = 'deleting' WHERE uuid = $1`, [app.uuid]);
    expect(await acts.destroyAppPreviews(app.uuid)).toBe(1);
    expect(await count(`preview_environments WHERE id = $1`, [id])).toBe(0);
    expect(await count(`apps WHERE uuid = $1`, [envApp])).toBe(0);
    expect(await count(`sim_apps WHERE app_uuid = $1`, [envApp])).toBe(0);
    const audits = await count(`audit_events WHERE resource_uuid = $1`, [envApp]);
    expect(audits).toBe(made + 1);

    expect(await acts.destroyAppPreviews(app.uuid)).toBe(0);
    expect(await count(`audit_events WHERE resource_uuid = $1`, [envApp])).toBe(audits);
    expect(await count(`apps WHERE uuid = $1`, [app.uuid])).toBe(1);
  });
});

describe("deleting a preview environment's own app", () => {
  it('deletes the environment through its workflow: app, workload and environment gone, the parent untouched', async () => {
    const { app, secret } = await enabledApp();
    const opened = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'opened', number: 31, headSha: sha() }),
    ).expect(202);
    const id: number = opened.body.preview_environment_id;
    await eventually(async () => (await status(app, id)) === 'active', { what: 'active' });
    const [{ app_uuid: previewApp }] = await stack.ds.query(`SELECT app_uuid FROM preview_environments WHERE id = $1`, [
      id,
    ]);

    const res = await stack.http.delete(`/api/v1/apps/${previewApp}`).set(auth()).expect(202);
    expect(res.body).toMatchObject({ uuid: previewApp, state: 'deleting' });
    const handle = stack.temporal.workflow.getHandle(`preview/${app.uuid}/pr-31`);
    expect(await handle.result()).toBe('gone');
    expect(await count(`preview_environments WHERE id = $1`, [id])).toBe(0);
    expect(await count(`apps WHERE uuid = $1`, [previewApp])).toBe(0);
    expect(await count(`sim_apps WHERE app_uuid = $1`, [previewApp])).toBe(0);
    expect(await count(`operations WHERE resource_uuid = $1 AND workflow_type = 'appDelete'`, [previewApp])).toBe(0);
    expect((await stack.http.get(`/api/v1/apps/${app.uuid}`).set(auth())).body.state).not.toBe('deleting');
  });
});

describe('a code-host delivery for an app being deleted', () => {
  it('is refused with 409 and writes nothing: no new environment, no new commit for an existing one', async () => {
    const { app, secret } = await enabledApp();
    const opened = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'opened', number: 1, headSha: sha() }),
    ).expect(202);
    const id: number = opened.body.preview_environment_id;
    await eventually(async () => (await status(app, id)) === 'active', { what: 'active' });
    const before = await stack.ds.query(`SELECT head_sha, generation, status FROM preview_environments WHERE id = $1`, [
      id,
    ]);
    const audits = await count(`audit_events WHERE app_uuid = $1`, [app.uuid]);
    // The window between DELETE /apps/{uuid} (state deleting) and the saga destroying the previews.
    await stack.ds.query(`UPDATE apps SET state = 'deleting' WHERE uuid = $1`, [app.uuid]);

    const created = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'opened', number: 2, headSha: sha() }),
    );
    expect(created.status).toBe(409);
    expect(created.body.detail).toMatch(/being deleted/);
    const pushed = await deliver(stack, app.uuid, secret, 'push', pushPayload('staging', sha()));
    expect(pushed.status).toBe(409);
    const updated = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'synchronize', number: 1, headSha: sha() }),
    );
    expect(updated.status).toBe(409);

    expect(
      await stack.ds.query(`SELECT head_sha, generation, status FROM preview_environments WHERE id = $1`, [id]),
    ).toEqual(before);
    expect(await count(`preview_environments WHERE parent_app_uuid = $1`, [app.uuid])).toBe(1);
    expect(await count(`audit_events WHERE app_uuid = $1`, [app.uuid])).toBe(audits);
    // A pull request closing still cleans up.
    const closed = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'closed', number: 1, headSha: sha() }),
    );
    expect(closed.status).toBe(202);
    expect(closed.body.result).toBe('destroying');
    await stack.temporal.workflow.getHandle(`preview/${app.uuid}/pr-1`).result();
    expect(await count(`preview_environments WHERE parent_app_uuid = $1`, [app.uuid])).toBe(0);
  });
});
