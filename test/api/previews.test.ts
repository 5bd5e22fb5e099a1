import { createHmac, randomBytes } from 'node:crypto';
import { SimulatedCore } from '../../activities/provider/simulated';
import { routes } from '../../api/routes';
import { PREVIEW_STATUSES } from '../../domain/previews';
import { insertApp, type AppRow } from '../support/app-rows';
import { deliver, pullRequestPayload, pushPayload, sha } from '../support/code-host';
import { createResource, memberWith, seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { eventually, expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let ws: Workspace;
const secrets: string[] = [];

const auth = (token: string) => ({ Authorization: `Bearer ${token}` });

beforeAll(async () => {
  stack = await startStack();
  await stack.startWorker();
  ws = await seedWorkspace(stack.ds);
});
afterAll(async () => {
  if (stack) expectNoSecretLeaks(stack, secrets, { allowInResponses: secrets });
  await stack?.close();
});

/** A parent app with previews enabled; returns its webhook secret (shown once). */
async function enabledApp(config: Record<string, unknown> = {}): Promise<{ app: AppRow; secret: string }> {
  const app = await insertApp(stack.ds, ws);
  const res = await stack.http
    .put(`/api/v1/apps/${app.uuid}/preview_environments/config`)
    .set(auth(ws.ownerToken))
    .send({ enabled: true, ...config });
  expect(res.status).toBe(200);
  secrets.push(res.body.webhook_secret);
  return { app, secret: res.body.webhook_secret };
}

async function show(app: AppRow, id: number) {
  return stack.http.get(`/api/v1/apps/${app.uuid}/preview_environments/${id}`).set(auth(ws.ownerToken));
}

async function until(app: AppRow, id: number, status: string) {
  return eventually(
    async () => {
      const res = await show(app, id);
      return res.body.status === status ? res.body : null;
    },
    { what: `preview ${id} ${status}` },
  );
}

async function gone(app: AppRow, id: number) {
  await eventually(async () => (await show(app, id)).status === 404, { what: `preview ${id} gone` });
}

describe('preview environment config', () => {
  it('GET answers defaults; the first PUT generates the webhook secret, sealed, shown in that response only', async () => {
    const app = await insertApp(stack.ds, ws);
    const url = `/api/v1/apps/${app.uuid}/preview_environments/config`;
    const initial = await stack.http.get(url).set(auth(ws.ownerToken));
    expect(initial.status).toBe(200);
    expect(initial.body).toMatchObject({
      enabled: false,
      triggers: { pull_requests: true, branch_patterns: [] },
      resource_id: null,
      project_id: null,
      use_parent_image: false,
      lifetime_hours: null,
      webhook_secret_set: false,
      created_at: null,
    });
    expect(initial.body.webhook_url).toMatch(new RegExp(`/api/v1/code_host/apps/${app.uuid}/events$`));
    expect(await stack.ds.query(`SELECT 1 FROM preview_configs WHERE app_uuid = $1`, [app.uuid])).toHaveLength(0);

    const first = await stack.http
      .put(url)
      .set(auth(ws.ownerToken))
      .send({ enabled: true, triggers: { branch_patterns: ['feature/*'] }, lifetime_hours: 48 });
    expect(first.status).toBe(200);
    expect(first.body.webhook_secret).toMatch(/^[0-9a-f]{64}$/);
    expect(first.body).toMatchObject({
      enabled: true,
      triggers: { pull_requests: true, branch_patterns: ['feature/*'] },
      lifetime_hours: 48,
      webhook_secret_set: true,
    });
    const secret: string = first.body.webhook_secret;
    secrets.push(secret);
    const second = await stack.http.put(url).set(auth(ws.ownerToken)).send({ use_parent_image: '1' });
    expect(second.body.webhook_secret).toBeUndefined();
    expect(second.body).toMatchObject({
      use_parent_image: true,
      lifetime_hours: 48,
      triggers: { branch_patterns: ['feature/*'] },
    });
    expect((await stack.http.get(url).set(auth(ws.ownerToken))).body.webhook_secret).toBeUndefined();
    const [{ webhook_secret_sealed }] = await stack.ds.query(
      `SELECT webhook_secret_sealed FROM preview_configs WHERE app_uuid = $1`,
      [app.uuid],
    );
    expect(webhook_secret_sealed).not.toContain(secret);
    expect(stack.secretBox.open(webhook_secret_sealed)).toBe(secret);
    expect(stack.responseBodies.filter((b) => b.includes(secret))).toHaveLength(1);

    const rotated = await stack.http.put(url).set(auth(ws.ownerToken)).send({ rotate_webhook_secret: true });
    expect(rotated.body.webhook_secret).toMatch(/^[0-9a-f]{64}$/);
    expect(rotated.body.webhook_secret).not.toBe(secret);
    secrets.push(rotated.body.webhook_secret);
    // The old secret no longer signs.
    expect((await deliver(stack, app.uuid, secret, 'ping', {})).status).toBe(401);
    expect((await deliver(stack, app.uuid, rotated.body.webhook_secret, 'ping', {})).status).toBe(200);
  });

  it('refuses bad values with 400/422 and writes nothing', async () => {
    const app = await insertApp(stack.ds, ws);
    const url = `/api/v1/apps/${app.uuid}/preview_environments/config`;
    expect((await stack.http.put(url).set(auth(ws.ownerToken)).send({ enabled: 'yes' })).status).toBe(400);
    expect((await stack.http.put(url).set(auth(ws.ownerToken)).send({ lifetime_hours: 0 })).status).toBe(400);
    expect(
      (
        await stack.http
          .put(url)
          .set(auth(ws.ownerToken))
          .send({ triggers: { branch_patterns: ['bad pattern'] } })
      ).status,
    ).toBe(400);
    expect(
      (await stack.http.put(url).set(auth(ws.ownerToken)).send({ resource_id: '00000000-0000-4000-8000-000000000009' }))
        .status,
    ).toBe(422);
    expect(
      (await stack.http.put(url).set(auth(ws.ownerToken)).send({ project_id: '00000000-0000-4000-8000-000000000009' }))
        .status,
    ).toBe(422);
    expect(await stack.ds.query(`SELECT 1 FROM preview_configs WHERE app_uuid = $1`, [app.uuid])).toHaveLength(0);
  });

  it('PRV-09 while enabled, a resource assigned to projects other than the target is refused with 422 (resource_id and parent mode)', async () => {
    const projectA = (
      await stack.http
        .post('/api/v1/projects')
        .set(auth(ws.ownerToken))
        .send({ name: `a-${randomBytes(3).toString('hex')}` })
    ).body.uuid;
    const projectB = (
      await stack.http
        .post('/api/v1/projects')
        .set(auth(ws.ownerToken))
        .send({ name: `b-${randomBytes(3).toString('hex')}` })
    ).body.uuid;
    const [{ region_id }] = await stack.ds.query(`SELECT region_id FROM compute_resources WHERE uuid = $1`, [
      ws.resourceUuid,
    ]);
    const assigned = await createResource(stack.ds, ws.uuid, region_id, `assigned-${randomBytes(3).toString('hex')}`);
    await stack.http
      .put(`/api/v1/projects/${projectA}`)
      .set(auth(ws.ownerToken))
      .send({ resource_ids: [assigned] })
      .expect(200);

    const app = await insertApp(stack.ds, ws, { projectId: projectB });
    const url = `/api/v1/apps/${app.uuid}/preview_environments/config`;
    const refused = await stack.http.put(url).set(auth(ws.ownerToken)).send({ enabled: true, resource_id: assigned });
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toEqual([
      { path: 'body.resource_id', message: expect.stringMatching(/assigned to other projects/) },
    ]);
    expect(await stack.ds.query(`SELECT 1 FROM preview_configs WHERE app_uuid = $1`, [app.uuid])).toHaveLength(0);
    // Disabled, the same resource may be stored; enabling it then is refused.
    const stored = await stack.http.put(url).set(auth(ws.ownerToken)).send({ enabled: false, resource_id: assigned });
    expect(stored.status).toBe(200);
    secrets.push(stored.body.webhook_secret);
    expect((await stack.http.put(url).set(auth(ws.ownerToken)).send({ enabled: true })).status).toBe(422);
    // The target project among the resource's projects: allowed.
    const ok = await stack.http.put(url).set(auth(ws.ownerToken)).send({ enabled: true, project_id: projectA });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ enabled: true, resource_id: assigned, project_id: projectA });

    // Parent mode: the parent's own resource, assigned to project A, while the parent is in B.
    const parentOnAssigned = await insertApp(stack.ds, ws, { projectId: projectB, resourceUuid: assigned });
    const parentMode = await stack.http
      .put(`/api/v1/apps/${parentOnAssigned.uuid}/preview_environments/config`)
      .set(auth(ws.ownerToken))
      .send({ enabled: true });
    expect(parentMode.status).toBe(422);
    expect(parentMode.body.errors[0].path).toBe('body.enabled');
    // An unassigned resource fits any project.
    const free = await insertApp(stack.ds, ws, { projectId: projectB });
    const fine = await stack.http
      .put(`/api/v1/apps/${free.uuid}/preview_environments/config`)
      .set(auth(ws.ownerToken))
      .send({ enabled: true });
    expect(fine.status).toBe(200);
    secrets.push(fine.body.webhook_secret);
  });

  it('needs apps:operate to read and write; a closed project hides the app (404)', async () => {
    const app = await insertApp(stack.ds, ws);
    const url = `/api/v1/apps/${app.uuid}/preview_environments/config`;
    expect((await stack.http.get(url).set(auth(await tokenWith(stack.ds, ws.uuid, ['apps:view'])))).status).toBe(403);
    expect((await stack.http.get(url).set(auth(await tokenWith(stack.ds, ws.uuid, ['apps:operate'])))).status).toBe(
      200,
    );
    const project = (
      await stack.http
        .post('/api/v1/projects')
        .set(auth(ws.ownerToken))
        .send({ name: `closed-${randomBytes(3).toString('hex')}` })
    ).body.uuid;
    const hidden = await insertApp(stack.ds, ws, { projectId: project });
    const outsider = await memberWith(stack.ds, ws.uuid, 'prv-outsider', [
      'apps:operate',
      'apps:view',
      'apps:manage',
      'apps:deploy',
    ]);
    await memberWith(stack.ds, ws.uuid, 'prv-insider', ['apps:operate']);
    await stack.http
      .post(`/api/v1/projects/${project}/restrictions`)
      .set(auth(ws.ownerToken))
      .send({ subject_type: 'role', role_name: 'prv-insider' })
      .expect(201);
    expect(
      (await stack.http.get(`/api/v1/apps/${hidden.uuid}/preview_environments/config`).set(auth(outsider.token)))
        .status,
    ).toBe(404);
    expect(
      (await stack.http.get(`/api/v1/apps/${hidden.uuid}/preview_environments`).set(auth(outsider.token))).status,
    ).toBe(404);
  });
});

describe('code-host deliveries', () => {
  it('refuses a missing or bad X-Hub-Signature-256 with 401 and writes nothing', async () => {
    const { app, secret } = await enabledApp();
    const payload = pullRequestPayload({ action: 'opened', number: 1, headSha: sha() });
    const bad = await deliver(stack, app.uuid, secret, 'pull_request', payload, {
      signature: `sha256=${'0'.repeat(64)}`,
    });
    expect(bad.status).toBe(401);
    expect(bad.headers['content-type']).toMatch(/problem\+json/);
    expect((await deliver(stack, app.uuid, 'not-the-secret', 'pull_request', payload)).status).toBe(401);
    expect((await deliver(stack, app.uuid, secret, 'pull_request', payload, { signature: 'garbage' })).status).toBe(
      401,
    );
    const unsigned = await stack.http
      .post(`/api/v1/code_host/apps/${app.uuid}/events`)
      .set('X-GitHub-Event', 'pull_request')
      .send(payload);
    expect(unsigned.status).toBe(401);
    // Signed for another body (the signature covers the raw bytes).
    const other = JSON.stringify({ ...payload, number: 2 });
    const replayed = await deliver(stack, app.uuid, secret, 'pull_request', payload, {
      signature: `sha256=${createHmac('sha256', secret).update(other).digest('hex')}`,
    });
    expect(replayed.status).toBe(401);
    expect((await deliver(stack, '00000000-0000-4000-8000-000000000002', secret, 'pull_request', payload)).status).toBe(
      401,
    );
    expect(
      await stack.ds.query(`SELECT 1 FROM preview_environments WHERE parent_app_uuid = $1`, [app.uuid]),
    ).toHaveLength(0);
    // A good signature needs no bearer token.
    expect((await deliver(stack, app.uuid, secret, 'ping', { zen: 'hi' })).status).toBe(200);
  });

  it('answers malformed signed deliveries with 400 and unknown events with 202 ignored, writing nothing', async () => {
    const { app, secret } = await enabledApp();
    const raw = '{"action": "opened", ';
    const res = await stack.http
      .post(`/api/v1/code_host/apps/${app.uuid}/events`)
      .set('Content-Type', 'application/json')
      .set('X-GitHub-Event', 'pull_request')
      .set('X-Hub-Signature-256', `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`)
      .send(raw);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/problem\+json/);
    expect((await deliver(stack, app.uuid, secret, 'pull_request', { action: 'opened', number: 'x' })).status).toBe(
      400,
    );
    expect(
      (
        await deliver(stack, app.uuid, secret, 'pull_request', {
          ...pullRequestPayload({ action: 'opened', number: 4, headSha: 'not-a-sha' }),
        })
      ).status,
    ).toBe(400);
    expect((await deliver(stack, app.uuid, secret, 'pull_request', [1, 2])).status).toBe(400);
    const unknown = await deliver(stack, app.uuid, secret, 'issues', { action: 'opened' });
    expect(unknown.status).toBe(202);
    expect(unknown.body.result).toBe('ignored');
    const labeled = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'labeled', number: 4, headSha: sha() }),
    );
    expect(labeled.body.result).toBe('ignored');
    expect((await deliver(stack, app.uuid, secret, 'push', { ref: 'refs/tags/v1', after: sha() })).body.result).toBe(
      'ignored',
    );
    expect(
      await stack.ds.query(`SELECT 1 FROM preview_environments WHERE parent_app_uuid = $1`, [app.uuid]),
    ).toHaveLength(0);
  });

  it('PRV-01 PRV-03 PRV-11 PRV-12 a pull request drives creating -> active -> updating -> active -> destroying -> gone', async () => {
    const { app, secret } = await enabledApp();
    const first = sha();
    // A transient fault holds each step for a retry interval, so the intermediate states are observable.
    await SimulatedCore.injectFault(stack.ds, 'apps.startBuild', 1, { retryable: true });
    const opened = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({
        action: 'opened',
        number: 7,
        headSha: first,
        branch: 'feature/login',
        title: 'Add login',
        author: 'alice',
      }),
    );
    expect(opened.status).toBe(202);
    expect(opened.body).toEqual({ result: 'created', preview_environment_id: expect.any(Number) });
    const id: number = opened.body.preview_environment_id;
    const creating = await show(app, id);
    expect(creating.body.status).toBe('creating');
    expect(creating.body.commit_sha).toBe('');
    expect(creating.body.last_deployed_at).toBeNull();

    const active = await until(app, id, 'active');
    expect(active).toMatchObject({
      id,
      app_name: `${app.name}-pr-7`,
      pull_request_number: 7,
      pull_request_title: 'Add login',
      pull_request_author: 'alice',
      pull_request_state: 'open',
      pull_request_url: 'https://code.example.test/acme/shop/pull/7',
      pull_request_merged: false,
      branch: 'feature/login',
      base_branch: 'main',
      commit_sha: first,
      deployment_error: '',
      closed_at: null,
      expires_at: null,
    });
    expect(active.url).toMatch(new RegExp(`^https://${app.name}-pr-7\\.`));
    expect(active.last_commit_at).not.toBeNull();
    expect(active.last_deployed_at).not.toBeNull();
    // PRV-03: an app of its own, its parent recorded.
    expect(active.app_uuid).not.toBe(app.uuid);
    const [previewApp] = await stack.ds.query(
      `SELECT name, preview_parent_uuid, state, workspace_uuid FROM apps WHERE uuid = $1`,
      [active.app_uuid],
    );
    expect(previewApp).toEqual({
      name: active.app_name,
      preview_parent_uuid: app.uuid,
      state: 'running',
      workspace_uuid: ws.uuid,
    });
    const [workload] = await stack.ds.query(`SELECT image FROM sim_apps WHERE app_uuid = $1`, [active.app_uuid]);
    expect(workload.image).toBe(`registry.simulated.berth/${active.app_uuid}:${first}`);

    const second = sha();
    await SimulatedCore.injectFault(stack.ds, 'apps.startBuild', 1, { retryable: true });
    const pushed = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({
        action: 'synchronize',
        number: 7,
        headSha: second,
        branch: 'feature/login',
        title: 'Add login',
        author: 'alice',
      }),
    );
    expect(pushed.body).toEqual({ result: 'updated', preview_environment_id: id });
    const updating = await show(app, id);
    expect(updating.body.status).toBe('updating');
    expect(updating.body.commit_sha).toBe(first);
    const updated = await until(app, id, 'active');
    expect(updated.commit_sha).toBe(second);
    expect(new Date(updated.last_deployed_at).getTime()).toBeGreaterThan(new Date(active.last_deployed_at).getTime());
    expect(new Date(updated.last_commit_at).getTime()).toBeGreaterThan(new Date(active.last_commit_at).getTime());

    // Events carry the preview app's own app_id.
    const events = await eventually(
      async () => {
        const list = await stack.ds.query(`SELECT type, payload FROM events WHERE app_uuid = $1 ORDER BY created_at`, [
          active.app_uuid,
        ]);
        return list.length >= 4 ? list : null;
      },
      { what: 'four deploy events' },
    );
    expect(events.map((e: { type: string }) => e.type)).toEqual([
      'deploy_started',
      'deploy_ended',
      'deploy_started',
      'deploy_ended',
    ]);
    expect(events[3].payload.data).toMatchObject({
      app_id: active.app_uuid,
      commit_sha: second,
      status: 'succeeded',
      preview_environment_id: id,
    });

    await SimulatedCore.injectFault(stack.ds, 'apps.delete', 1, { retryable: true });
    const closed = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'closed', number: 7, headSha: second, merged: true }),
    );
    expect(closed.body).toEqual({ result: 'destroying', preview_environment_id: id });
    const destroying = await show(app, id);
    expect(destroying.body).toMatchObject({
      status: 'destroying',
      pull_request_state: 'closed',
      pull_request_merged: true,
    });
    expect(destroying.body.closed_at).not.toBeNull();
    await gone(app, id);
    expect(await stack.ds.query(`SELECT 1 FROM apps WHERE uuid = $1`, [active.app_uuid])).toHaveLength(0);
    expect(await stack.ds.query(`SELECT 1 FROM sim_apps WHERE app_uuid = $1`, [active.app_uuid])).toHaveLength(0);
    const handle = stack.temporal.workflow.getHandle(`preview/${app.uuid}/pr-7`);
    expect(await handle.result()).toBe('gone');
  });

  it('a reopened pull request gets a new environment once the old one is gone (409 while it is being destroyed)', async () => {
    const { app, secret } = await enabledApp();
    const first = (
      await deliver(
        stack,
        app.uuid,
        secret,
        'pull_request',
        pullRequestPayload({ action: 'opened', number: 5, headSha: sha() }),
      )
    ).body.preview_environment_id;
    const active = await until(app, first, 'active');
    await SimulatedCore.injectFault(stack.ds, 'apps.delete', 1, { retryable: true });
    await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'closed', number: 5, headSha: sha() }),
    ).expect(202);
    const early = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'reopened', number: 5, headSha: sha() }),
    );
    expect(early.status).toBe(409);
    await gone(app, first);
    await stack.temporal.workflow.getHandle(`preview/${app.uuid}/pr-5`).result();
    const reopened = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'reopened', number: 5, headSha: sha() }),
    );
    expect(reopened.body.result).toBe('created');
    expect(reopened.body.preview_environment_id).not.toBe(first);
    const again = await until(app, reopened.body.preview_environment_id, 'active');
    expect(again.app_uuid).not.toBe(active.app_uuid);
    expect(again.closed_at).toBeNull();
  });

  it('PRV-07 EVT-02 a failed deploy ends failed with deployment_error and deploy_ended data.message the reason; redeploy (apps:deploy) brings it back to active', async () => {
    const { app, secret } = await enabledApp();
    await SimulatedCore.injectFault(stack.ds, 'apps.startBuild', 1, {
      retryable: false,
      message: 'build failed: npm ERR! missing script: start',
    });
    const head = sha();
    const opened = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'opened', number: 3, headSha: head }),
    );
    const id = opened.body.preview_environment_id;
    const failed = await until(app, id, 'failed');
    expect(failed.deployment_error).toBe('build failed: npm ERR! missing script: start');
    expect(failed.last_deployed_at).toBeNull();
    const ended = await eventually(
      async () =>
        (
          await stack.ds.query(`SELECT payload FROM events WHERE app_uuid = $1 AND type = 'deploy_ended'`, [
            failed.app_uuid,
          ])
        )[0],
      { what: 'deploy_ended' },
    );
    expect(ended.payload.data).toMatchObject({
      status: 'failed',
      message: 'build failed: npm ERR! missing script: start',
    });
    expect(ended.payload.data).not.toHaveProperty('error');

    const viewer = await tokenWith(stack.ds, ws.uuid, ['apps:view', 'apps:manage', 'apps:operate']);
    expect(
      (await stack.http.post(`/api/v1/apps/${app.uuid}/preview_environments/${id}/redeploy`).set(auth(viewer))).status,
    ).toBe(403);
    const deployer = await tokenWith(stack.ds, ws.uuid, ['apps:deploy']);
    const redeploy = await stack.http
      .post(`/api/v1/apps/${app.uuid}/preview_environments/${id}/redeploy`)
      .set(auth(deployer));
    expect(redeploy.status).toBe(202);
    expect(redeploy.body.status).toBe('updating');
    expect(redeploy.body.deployment_error).toBe('');
    const active = await until(app, id, 'active');
    expect(active.deployment_error).toBe('');
    expect(failed.commit_sha).toBe('');
    expect(active.commit_sha).toBe(head);
    expect(active.last_deployed_at).not.toBeNull();
  });

  it('PRV-04 a push to a matching branch creates a branch environment (no pull request number); a deleted branch destroys it', async () => {
    const { app, secret } = await enabledApp({
      triggers: { pull_requests: false, branch_patterns: ['release/**', 'staging'] },
    });
    const ignored = await deliver(stack, app.uuid, secret, 'push', pushPayload('feature/x', sha()));
    expect(ignored.body).toMatchObject({ result: 'ignored' });
    const prIgnored = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'opened', number: 9, headSha: sha() }),
    );
    expect(prIgnored.body).toMatchObject({ result: 'ignored' });
    const commit = sha();
    const created = await deliver(stack, app.uuid, secret, 'push', pushPayload('release/2.0/rc', commit));
    expect(created.body.result).toBe('created');
    const env = await until(app, created.body.preview_environment_id, 'active');
    expect(env).toMatchObject({
      pull_request_number: null,
      branch: 'release/2.0/rc',
      base_branch: 'main',
      commit_sha: commit,
      pull_request_state: 'open',
      pull_request_merged: false,
    });
    expect(env.app_name).toBe(`${app.name}-release-2-0-rc`);
    const deleted = await deliver(
      stack,
      app.uuid,
      secret,
      'push',
      pushPayload('release/2.0/rc', '0'.repeat(40), { deleted: true }),
    );
    expect(deleted.body.result).toBe('destroying');
    await gone(app, env.id);
  });

  it('disabled previews ignore new pull requests but closing one still cleans up', async () => {
    const { app, secret } = await enabledApp();
    const opened = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'opened', number: 11, headSha: sha() }),
    );
    await until(app, opened.body.preview_environment_id, 'active');
    await stack.http
      .put(`/api/v1/apps/${app.uuid}/preview_environments/config`)
      .set(auth(ws.ownerToken))
      .send({ enabled: false })
      .expect(200);
    const another = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'opened', number: 12, headSha: sha() }),
    );
    expect(another.body).toEqual({ result: 'ignored', reason: 'preview environments are disabled for this app' });
    const closed = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'closed', number: 11, headSha: sha() }),
    );
    expect(closed.body.result).toBe('destroying');
    await gone(app, opened.body.preview_environment_id);
  });
});

describe('preview environment endpoints', () => {
  it('PRV-02 PRV-05 lists newest first, filters by status, shows and deletes by integer id (apps:manage)', async () => {
    const { app, secret } = await enabledApp();
    await SimulatedCore.injectFault(stack.ds, 'apps.startBuild', 1, { retryable: false, message: 'boom' });
    const a = (
      await deliver(
        stack,
        app.uuid,
        secret,
        'pull_request',
        pullRequestPayload({ action: 'opened', number: 21, headSha: sha() }),
      )
    ).body.preview_environment_id;
    await until(app, a, 'failed');
    const b = (
      await deliver(
        stack,
        app.uuid,
        secret,
        'pull_request',
        pullRequestPayload({ action: 'opened', number: 22, headSha: sha() }),
      )
    ).body.preview_environment_id;
    await until(app, b, 'active');
    expect(Number.isInteger(a) && Number.isInteger(b)).toBe(true);

    const list = await stack.http.get(`/api/v1/apps/${app.uuid}/preview_environments`).set(auth(ws.ownerToken));
    expect(list.status).toBe(200);
    expect(list.body.map((p: { id: number }) => p.id)).toEqual([b, a]);
    expect(list.headers['x-total-count']).toBe('2');
    const failedOnly = await stack.http
      .get(`/api/v1/apps/${app.uuid}/preview_environments?status=failed`)
      .set(auth(ws.ownerToken));
    expect(failedOnly.body.map((p: { id: number }) => p.id)).toEqual([a]);
    for (const s of PREVIEW_STATUSES) {
      const res = await stack.http
        .get(`/api/v1/apps/${app.uuid}/preview_environments?status=${s}`)
        .set(auth(ws.ownerToken));
      expect(res.status).toBe(200);
      for (const p of res.body) expect(p.status).toBe(s);
    }
    expect(
      (await stack.http.get(`/api/v1/apps/${app.uuid}/preview_environments?status=sleeping`).set(auth(ws.ownerToken)))
        .status,
    ).toBe(400);
    expect(
      (await stack.http.get(`/api/v1/apps/${app.uuid}/preview_environments/abc`).set(auth(ws.ownerToken))).status,
    ).toBe(404);
    expect(
      (await stack.http.get(`/api/v1/apps/${app.uuid}/preview_environments/999999`).set(auth(ws.ownerToken))).status,
    ).toBe(404);
    const other = await insertApp(stack.ds, ws);
    expect(
      (await stack.http.get(`/api/v1/apps/${other.uuid}/preview_environments/${a}`).set(auth(ws.ownerToken))).status,
    ).toBe(404);

    const operator = await tokenWith(stack.ds, ws.uuid, ['apps:operate', 'apps:deploy', 'apps:view']);
    expect(
      (await stack.http.delete(`/api/v1/apps/${app.uuid}/preview_environments/${a}`).set(auth(operator))).status,
    ).toBe(403);
    const manager = await tokenWith(stack.ds, ws.uuid, ['apps:manage']);
    const del = await stack.http.delete(`/api/v1/apps/${app.uuid}/preview_environments/${a}`).set(auth(manager));
    expect(del.status).toBe(202);
    expect(del.body).toMatchObject({ id: a, status: 'destroying' });
    const again = await stack.http
      .post(`/api/v1/apps/${app.uuid}/preview_environments/${a}/redeploy`)
      .set(auth(ws.ownerToken));
    expect([404, 409]).toContain(again.status);
    await gone(app, a);
  });

  it('PRV-06 no endpoint creates a preview environment by hand', async () => {
    const creators = routes.filter((r) => r.method === 'post' && /preview_environments$/.test(r.path));
    expect(creators).toEqual([]);
    const app = await insertApp(stack.ds, ws);
    const res = await stack.http
      .post(`/api/v1/apps/${app.uuid}/preview_environments`)
      .set(auth(ws.ownerToken))
      .send({ branch: 'main' });
    expect(res.status).toBe(405);
    expect(
      await stack.ds.query(`SELECT 1 FROM preview_environments WHERE parent_app_uuid = $1`, [app.uuid]),
    ).toHaveLength(0);
  });
});
