import { createHash } from 'node:crypto';
import { insertApp } from '../support/app-rows';
import { deliver, pullRequestPayload, sha } from '../support/code-host';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { eventually, expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';

/** PRV-03: a preview's app is a clone of its parent, and each commit a deployment of it through the apps area. */
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

async function status(parent: string, id: number): Promise<any> {
  return (await stack.http.get(`/api/v1/apps/${parent}/preview_environments/${id}`).set(auth(ws.ownerToken))).body;
}

describe('the preview app as a clone of its parent', () => {
  it("PRV-03 is made as steps of its workflow; has its parent's settings, variables (a secret one stays secret) and secret files; its commits are listed deployments; its effective environment reaches the rollout; destroying removes its workload and capacity", async () => {
    const project = await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'preview-clone' });
    expect(project.status).toBe(201);
    const parent = await insertApp(stack.ds, ws, { projectId: project.body.uuid });
    await stack.ds.query(
      `UPDATE apps SET internal_port = 3000, builder = 'dockerfile', health_checks = '[{"type": "http", "path": "/healthz"}]',
              quota = '{"cpu_size": 0.5, "ram_size": 536870912, "disk_size": 2147483648, "replicas": 1}' WHERE uuid = $1`,
      [parent.uuid],
    );
    const token = 'preview-parent-token-value-31';
    secrets.push(token);
    expect(
      (
        await stack.http
          .put(`/api/v1/projects/${project.body.uuid}/variables`)
          .set(auth(ws.ownerToken))
          .send({
            variables: [
              { key: 'REGION', value: 'eu' },
              { key: 'LOG_LEVEL', value: 'info' },
            ],
          })
      ).status,
    ).toBe(200);
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${parent.uuid}/variables`)
          .set(auth(ws.ownerToken))
          .send({
            variables: [
              { key: 'LOG_LEVEL', value: 'debug' },
              { key: 'API_TOKEN', value: token, secret: true },
            ],
          })
      ).status,
    ).toBe(200);
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${parent.uuid}/secret_files`)
          .set(auth(ws.ownerToken))
          .send({ files: [{ name: 'ca.pem', content: 'preview-parent-file-content' }] })
      ).status,
    ).toBe(200);
    secrets.push('preview-parent-file-content');
    const config = await stack.http
      .put(`/api/v1/apps/${parent.uuid}/preview_environments/config`)
      .set(auth(ws.ownerToken))
      .send({ enabled: true });
    expect(config.status).toBe(200);
    secrets.push(config.body.webhook_secret);

    const head = sha();
    const opened = await deliver(
      stack,
      parent.uuid,
      config.body.webhook_secret,
      'pull_request',
      pullRequestPayload({ action: 'opened', number: 41, headSha: head, branch: 'feature/clone' }),
    );
    const id: number = opened.body.preview_environment_id;
    const active = await eventually(
      async () => {
        const env = await status(parent.uuid, id);
        return env.status === 'active' ? env : null;
      },
      { what: 'preview active' },
    );
    const preview: string = active.app_uuid;
    // the app is made as steps of the environment's workflow, each in its history
    const history = await stack.temporal.workflow.getHandle(`preview/${parent.uuid}/pr-41`).fetchHistory();
    const steps = history.events!.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    expect(steps.slice(0, 5)).toEqual([
      'readPreviewIntent',
      'insertPreviewApp',
      'copyAppSettings',
      'provisionApp',
      'transition',
    ]);

    const [row] = await stack.ds.query(
      `SELECT preview_parent_uuid, project_uuid, internal_port, builder, health_checks, quota, deployment_method FROM apps WHERE uuid = $1`,
      [preview],
    );
    expect(row).toEqual({
      preview_parent_uuid: parent.uuid,
      project_uuid: project.body.uuid,
      internal_port: 3000,
      builder: 'dockerfile',
      health_checks: [{ type: 'http', path: '/healthz' }],
      quota: { cpu_size: 0.5, ram_size: 536870912, disk_size: 2147483648, replicas: 1 },
      deployment_method: 'git_push',
    });
    const variables = await stack.http.get(`/api/v1/apps/${preview}/variables`).set(auth(ws.ownerToken));
    expect(variables.body.map((v: any) => [v.key, v.secret, v.value])).toEqual([
      ['API_TOKEN', true, null],
      ['LOG_LEVEL', false, 'debug'],
    ]);
    const files = await stack.http.get(`/api/v1/apps/${preview}/secret_files`).set(auth(ws.ownerToken));
    expect(files.body.map((f: any) => f.name)).toEqual(['ca.pem']);
    const [held] = await stack.ds.query(
      `SELECT resource_uuid, cpu_size FROM resource_allocations WHERE owner_uuid = $1`,
      [preview],
    );
    expect(held).toEqual({ resource_uuid: parent.resourceUuid, cpu_size: 0.5 });

    // The commit is a deployment of the preview app, built and rolled out by the apps driver.
    const deployments = await stack.http.get(`/api/v1/apps/${preview}/deployments`).set(auth(ws.ownerToken));
    expect(deployments.status).toBe(200);
    expect(deployments.body).toEqual([
      expect.objectContaining({
        state: 'completed',
        commit_sha: head,
        branch: 'feature/clone',
        deployment_method: 'git_push',
        message: null,
      }),
    ]);
    const [sim] = await stack.ds.query(`SELECT image, env_keys, env_digest FROM sim_apps WHERE app_uuid = $1`, [
      preview,
    ]);
    expect(sim.image).toBe(`registry.simulated.berth/${preview}:${head}`);
    // project variables overlaid by the app's (copied from the parent), secret values included
    expect(sim.env_keys).toEqual(['API_TOKEN', 'LOG_LEVEL', 'REGION']);
    expect(sim.env_digest).toBe(
      createHash('sha256')
        .update(
          JSON.stringify([
            ['API_TOKEN', token],
            ['LOG_LEVEL', 'debug'],
            ['REGION', 'eu'],
          ]),
        )
        .digest('hex'),
    );

    // One pair of deploy events, the preview's own (no second pair from the deployment workflow).
    const events = await eventually(
      async () => {
        const list = await stack.ds.query(`SELECT type, payload FROM events WHERE app_uuid = $1 ORDER BY created_at`, [
          preview,
        ]);
        return list.length >= 2 ? list : null;
      },
      { what: 'deploy events' },
    );
    expect(events.map((e: { type: string }) => e.type)).toEqual(['deploy_started', 'deploy_ended']);
    expect(events[1].payload.data).toMatchObject({
      app_id: preview,
      preview_environment_id: id,
      commit_sha: head,
      status: 'succeeded',
    });

    // A new commit: a second deployment, newest first.
    const next = sha();
    await deliver(
      stack,
      parent.uuid,
      config.body.webhook_secret,
      'pull_request',
      pullRequestPayload({ action: 'synchronize', number: 41, headSha: next, branch: 'feature/clone' }),
    ).expect(202);
    await eventually(
      async () => {
        const env = await status(parent.uuid, id);
        return env.status === 'active' && env.commit_sha === next ? env : null;
      },
      { what: 'second commit active' },
    );
    const again = await stack.http.get(`/api/v1/apps/${preview}/deployments`).set(auth(ws.ownerToken));
    expect(again.body.map((d: any) => [d.commit_sha, d.state])).toEqual([
      [next, 'completed'],
      [head, 'completed'],
    ]);

    await deliver(
      stack,
      parent.uuid,
      config.body.webhook_secret,
      'pull_request',
      pullRequestPayload({ action: 'closed', number: 41, headSha: next }),
    ).expect(202);
    await stack.temporal.workflow.getHandle(`preview/${parent.uuid}/pr-41`).result();
    for (const table of [
      'apps WHERE uuid',
      'sim_apps WHERE app_uuid',
      'resource_allocations WHERE owner_uuid',
      'app_deployments WHERE app_uuid',
    ]) {
      expect(await stack.ds.query(`SELECT 1 FROM ${table} = $1`, [preview])).toHaveLength(0);
    }
    expect(await stack.ds.query(`SELECT 1 FROM app_variables WHERE app_uuid = $1`, [parent.uuid])).toHaveLength(2);
  });

  it("with use_parent_image the preview deploys the parent's current image (a parent_image deployment, no build)", async () => {
    const parent = await insertApp(stack.ds, ws);
    const image = `registry.simulated.berth/${parent.uuid}:parent-release`;
    await stack.ds.query(`INSERT INTO sim_apps (app_uuid, status, replicas, image) VALUES ($1, 'running', 1, $2)`, [
      parent.uuid,
      image,
    ]);
    const config = await stack.http
      .put(`/api/v1/apps/${parent.uuid}/preview_environments/config`)
      .set(auth(ws.ownerToken))
      .send({ enabled: true, use_parent_image: true });
    secrets.push(config.body.webhook_secret);
    const head = sha();
    const opened = await deliver(
      stack,
      parent.uuid,
      config.body.webhook_secret,
      'pull_request',
      pullRequestPayload({ action: 'opened', number: 42, headSha: head }),
    );
    const active = await eventually(
      async () => {
        const env = await status(parent.uuid, opened.body.preview_environment_id);
        return env.status === 'active' ? env : null;
      },
      { what: 'preview active' },
    );
    expect(active.commit_sha).toBe(head);
    const [row] = await stack.ds.query(`SELECT deployment_method, parent_app_uuid FROM apps WHERE uuid = $1`, [
      active.app_uuid,
    ]);
    expect(row).toEqual({ deployment_method: 'parent_image', parent_app_uuid: parent.uuid });
    const deployments = await stack.http.get(`/api/v1/apps/${active.app_uuid}/deployments`).set(auth(ws.ownerToken));
    expect(deployments.body).toEqual([
      expect.objectContaining({ state: 'completed', deployment_method: 'parent_image', image, commit_sha: null }),
    ]);
    const [sim] = await stack.ds.query(`SELECT image FROM sim_apps WHERE app_uuid = $1`, [active.app_uuid]);
    expect(sim.image).toBe(image);
  });

  it("a resource without room for the parent's quota fails the environment with the reason; no app is made, nothing is held", async () => {
    const parent = await insertApp(stack.ds, ws);
    const [{ total_cpu_size: total }] = await stack.ds.query(
      `SELECT total_cpu_size FROM compute_resources WHERE uuid = $1`,
      [ws.resourceUuid],
    );
    await stack.ds.query(
      `UPDATE apps SET quota = jsonb_set(quota, '{cpu_size}', to_jsonb($2::float8)) WHERE uuid = $1`,
      [parent.uuid, Number(total) + 1],
    );
    const config = await stack.http
      .put(`/api/v1/apps/${parent.uuid}/preview_environments/config`)
      .set(auth(ws.ownerToken))
      .send({ enabled: true });
    secrets.push(config.body.webhook_secret);
    const opened = await deliver(
      stack,
      parent.uuid,
      config.body.webhook_secret,
      'pull_request',
      pullRequestPayload({ action: 'opened', number: 43, headSha: sha() }),
    );
    const failed = await eventually(
      async () => {
        const env = await status(parent.uuid, opened.body.preview_environment_id);
        return env.status === 'failed' ? env : null;
      },
      { what: 'preview failed' },
    );
    expect(failed.deployment_error).toMatch(/not enough cpu left on the compute resource/);
    expect(await stack.ds.query(`SELECT 1 FROM apps WHERE uuid = $1`, [failed.app_uuid])).toHaveLength(0);
    expect(
      await stack.ds.query(`SELECT 1 FROM resource_allocations WHERE owner_uuid = $1`, [failed.app_uuid]),
    ).toHaveLength(0);
  });
});
