import { randomUUID } from 'node:crypto';
import { SimulatedAppsControl } from '../../activities/provider/simulated/apps';
import { SimulatedCore } from '../../activities/provider/simulated';
import { auth, appWorkflowHarness, BIG_PLAN, gitRepository } from '../support/apps';
import { createResource, memberWith, seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { eventually, resultOnceStarted, startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let h: Awaited<ReturnType<typeof appWorkflowHarness>>;
let ws: Workspace;

beforeAll(async () => {
  stack = await startStack({ env: { BERTH_GIT_ALLOW_FILE_URLS: '1' } });
  h = await appWorkflowHarness(stack);
  ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
});
afterAll(async () => {
  await h?.close();
  await stack?.close();
});

async function runningApp(name: string, extra: Record<string, unknown> = {}) {
  const res = await h.api
    .post('/api/v1/apps')
    .set(auth(ws.ownerToken))
    .send({ name, resource_id: ws.resourceUuid, ...extra });
  expect(res.status).toBe(201);
  await eventually(async () => (await h.state(res.body.uuid)) === 'running', { what: `${name} running` });
  return res.body as { uuid: string; name: string };
}

async function deploy(appUuid: string, body: Record<string, unknown> = {}) {
  const res = await h.api.post(`/api/v1/apps/${appUuid}/deployments`).set(auth(ws.ownerToken)).send(body);
  expect(res.status).toBe(202);
  expect(res.body.state).toBe('pending');
  return res.body as { uuid: string };
}

const result = (appUuid: string, deploymentUuid: string) =>
  h.ts.client.workflow.getHandle(`app-deploy/${appUuid}/${deploymentUuid}`).result();

/** The deployment a public_git / github app made of its branch head at creation, once it has ended. */
async function initialDeployment(appUuid: string): Promise<{ uuid: string; outcome: string }> {
  const [d] = await eventually(
    async () => {
      const found: Array<{ uuid: string }> = await stack.ds.query(
        `SELECT uuid FROM app_deployments WHERE app_uuid = $1`,
        [appUuid],
      );
      return found.length > 0 && found;
    },
    { what: 'the deployment made at creation' },
  );
  // the row is written before the workflow that runs it starts
  return { uuid: d!.uuid, outcome: await resultOnceStarted<string>(h.ts.client, `app-deploy/${appUuid}/${d!.uuid}`) };
}

describe('deployments', () => {
  it('EVT-02 EVT-08 DEP-02 DEP-06 creating a public_git app deploys its branch head at once: resolved with real git, pending -> running -> completed; deploy_started then deploy_ended with message null', async () => {
    const repo = gitRepository(['first commit', 'add the homepage']);
    await h.ts.withWorker(async () => {
      const app = await runningApp('gitty', {
        deployment_method: 'public_git',
        deployment_config: { repository: repo.url, branch: 'main' },
      });
      const d = await initialDeployment(app.uuid);
      expect(d.outcome).toBe('completed');
      const [audit] = await stack.ds.query(
        `SELECT actor_type, source, action FROM audit_events WHERE resource_uuid = $1`,
        [d.uuid],
      );
      expect(audit).toEqual({ actor_type: 'system', source: 'workflow', action: 'deployment.create' });
      const shown = (await h.api.get(`/api/v1/apps/${app.uuid}/deployments/${d.uuid}`).set(auth(ws.ownerToken))).body;
      expect(shown).toMatchObject({
        state: 'completed',
        commit_sha: repo.head,
        commit_message: 'add the homepage',
        branch: 'main',
        message: null,
      });
      expect(shown.logs_stored_at).toEqual(expect.any(String));
      expect((await h.states(app.uuid)).slice(-2)).toEqual(['deploying', 'running']);
      const events = await h.events(app.uuid);
      expect(events.map((e) => e.type)).toEqual(['deploy_started', 'deploy_ended']);
      expect(events[0]!.data).toMatchObject({
        app_id: app.uuid,
        deployment_id: d.uuid,
        commit_sha: repo.head,
        commit_message: 'add the homepage',
        branch: 'main',
      });
      expect(events[1]!.data).toMatchObject({
        app_id: app.uuid,
        deployment_id: d.uuid,
        commit_sha: repo.head,
        message: null,
      });
      expect(events[1]!.data.message).toBeNull();
      // a later commit is picked up by the next deployment
      const next = repo.commit('fix the footer');
      const d2 = await deploy(app.uuid);
      expect(await result(app.uuid, d2.uuid)).toBe('completed');
      const list = (await h.api.get(`/api/v1/apps/${app.uuid}/deployments`).set(auth(ws.ownerToken))).body;
      expect(list.map((x: any) => [x.uuid, x.commit_sha])).toEqual([
        [d2.uuid, next],
        [d.uuid, repo.head],
      ]);
      const [sim] = await stack.ds.query(`SELECT image FROM sim_apps WHERE app_uuid = $1`, [app.uuid]);
      expect(sim.image).toContain(next);
    });
  });

  it('EVT-02 a failing deployment ends failed with data.message the reason; the app keeps its state', async () => {
    await h.ts.withWorker(async () => {
      const app = await runningApp('failing', { deployment_method: 'git_push' });
      await SimulatedAppsControl.script(stack.ds, app.uuid, { buildFailure: 'npm ERR! missing script: build' });
      const d = await deploy(app.uuid, { commit_sha: 'abc1234def' });
      expect(await result(app.uuid, d.uuid)).toBe('failed');
      const shown = (await h.api.get(`/api/v1/apps/${app.uuid}/deployments/${d.uuid}`).set(auth(ws.ownerToken))).body;
      expect(shown).toMatchObject({
        state: 'failed',
        message: 'npm ERR! missing script: build',
        commit_sha: 'abc1234def',
      });
      expect(await h.state(app.uuid)).toBe('running');
      const ended = (await h.events(app.uuid)).find((e) => e.type === 'deploy_ended')!;
      expect(ended.data.message).toBe('npm ERR! missing script: build');
      // an unreachable repository fails with git's reason when no commit is given
      const lost = await runningApp('lost', {
        deployment_method: 'public_git',
        deployment_config: { repository: 'file:///nonexistent/repo.git' },
      });
      expect((await initialDeployment(lost.uuid)).outcome).toBe('failed');
      const ended2 = (await h.events(lost.uuid)).find((e) => e.type === 'deploy_ended')!;
      expect(ended2.data.message).toMatch(/not reachable/);
      // a driver fault mid-way is a failure with its message too
      await SimulatedCore.injectFault(stack.ds, 'apps.rollout', 1, {
        retryable: false,
        message: 'image pull back-off',
      });
      const ok = await runningApp('pullfail', { deployment_method: 'cli_upload' });
      const d3 = await deploy(ok.uuid);
      expect(await result(ok.uuid, d3.uuid)).toBe('failed');
      expect((await h.events(ok.uuid)).find((e) => e.type === 'deploy_ended')!.data.message).toBe(
        'image pull back-off',
      );
    });
  });

  it('DEP-05 EVT-03 commit fields are null for non-git methods (container_registry, cli_upload); a commit given to them is a 422', async () => {
    const credential = randomUUID();
    await stack.ds.query(
      `INSERT INTO container_registry_credentials (uuid, workspace_uuid, name, registry, username, token_sealed) VALUES ($1, $2, 'r', 'generic', 'bot', $3)`,
      [credential, ws.uuid, stack.secretBox.seal('reg-token-abcdef')],
    );
    await h.ts.withWorker(async () => {
      const app = await runningApp('image', {
        deployment_method: 'container_registry',
        deployment_config: { image: 'ghcr.io/acme/api:2.1', credential_id: credential },
      });
      expect(
        (
          await h.api
            .post(`/api/v1/apps/${app.uuid}/deployments`)
            .set(auth(ws.ownerToken))
            .send({ commit_sha: 'abcdef1' })
        ).status,
      ).toBe(422);
      const d = await deploy(app.uuid);
      expect(await result(app.uuid, d.uuid)).toBe('completed');
      const shown = (await h.api.get(`/api/v1/apps/${app.uuid}/deployments/${d.uuid}`).set(auth(ws.ownerToken))).body;
      expect(shown).toMatchObject({
        commit_sha: null,
        commit_message: null,
        branch: null,
        image: 'ghcr.io/acme/api:2.1',
      });
      for (const e of await h.events(app.uuid))
        expect([e.data.commit_sha, e.data.commit_message, e.data.branch]).toEqual([null, null, null]);
      const [sim] = await stack.ds.query(`SELECT image FROM sim_apps WHERE app_uuid = $1`, [app.uuid]);
      expect(sim.image).toBe('ghcr.io/acme/api:2.1');
    });
  });

  it('DEP-02 cancel moves a running deployment to cancelling, then cancelled; deploy_ended says so', async () => {
    await h.ts.withWorker(async () => {
      const app = await runningApp('cancelme', { deployment_method: 'cli_upload' });
      await SimulatedAppsControl.script(stack.ds, app.uuid, { buildHold: true });
      const d = await deploy(app.uuid);
      await eventually(
        async () =>
          (await h.api.get(`/api/v1/apps/${app.uuid}/deployments/${d.uuid}`).set(auth(ws.ownerToken))).body.state ===
          'running',
        { what: 'running' },
      );
      const deployOnly = await tokenWith(stack.ds, ws.uuid, ['apps:deploy']);
      const cancel = await h.api.post(`/api/v1/apps/${app.uuid}/deployments/${d.uuid}/cancel`).set(auth(deployOnly));
      expect(cancel.status).toBe(202);
      expect(cancel.body.state).toBe('cancelling');
      expect(await result(app.uuid, d.uuid)).toBe('cancelled');
      expect(
        (await h.api.get(`/api/v1/apps/${app.uuid}/deployments/${d.uuid}`).set(auth(ws.ownerToken))).body.state,
      ).toBe('cancelled');
      expect(await h.state(app.uuid)).toBe('running');
      expect((await h.events(app.uuid)).map((e) => e.type)).toEqual(['deploy_started', 'deploy_ended']);
      expect(
        (await stack.ds.query(`SELECT status FROM sim_app_builds WHERE deployment_uuid = $1`, [d.uuid]))[0].status,
      ).toBe('cancelled');
      expect(
        (await h.api.post(`/api/v1/apps/${app.uuid}/deployments/${d.uuid}/cancel`).set(auth(ws.ownerToken))).status,
      ).toBe(422);
    });
  });

  it('DEP-01 DEP-03 DEP-04 lists deployments newest first, filtered by status and period', async () => {
    const app = await h.api
      .post('/api/v1/apps')
      .set(auth(ws.ownerToken))
      .send({ name: 'history', resource_id: ws.resourceUuid });
    const rows = [
      ['completed', 1],
      ['failed', 10],
      ['completed', 40],
      ['cancelled', 100],
    ] as const;
    const uuids: string[] = [];
    for (const [state, days] of rows) {
      const uuid = randomUUID();
      uuids.push(uuid);
      await stack.ds.query(
        `INSERT INTO app_deployments (uuid, app_uuid, workspace_uuid, state, deployment_method, created_at, updated_at)
        VALUES ($1, $2, $3, $4, 'git_push', now() - make_interval(days => $5), now() - make_interval(days => $5))`,
        [uuid, app.body.uuid, ws.uuid, state, days],
      );
    }
    const get = async (q: string) =>
      (await h.api.get(`/api/v1/apps/${app.body.uuid}/deployments${q}`).set(auth(ws.ownerToken))).body.map(
        (d: any) => d.uuid,
      );
    expect(await get('')).toEqual(uuids);
    expect(await get('?period=all')).toEqual(uuids);
    expect(await get('?period=7days')).toEqual([uuids[0]]);
    expect(await get('?period=30days')).toEqual([uuids[0], uuids[1]]);
    expect(await get('?period=90days')).toEqual([uuids[0], uuids[1], uuids[2]]);
    expect(await get('?status=completed')).toEqual([uuids[0], uuids[2]]);
    expect(await get('?status=completed&period=30days')).toEqual([uuids[0]]);
    expect(
      (await h.api.get(`/api/v1/apps/${app.body.uuid}/deployments?period=1year`).set(auth(ws.ownerToken))).status,
    ).toBe(400);
    expect(
      (await h.api.get(`/api/v1/apps/${app.body.uuid}/deployments?status=done`).set(auth(ws.ownerToken))).status,
    ).toBe(400);
    const one = (await h.api.get(`/api/v1/apps/${app.body.uuid}/deployments/${uuids[0]}`).set(auth(ws.ownerToken)))
      .body;
    expect(one.logs_stored_at).toBeNull();
  });
});

describe('clone', () => {
  async function source() {
    const app = await runningApp(`src${Math.floor(Math.random() * 1e6)}`, { deployment_method: 'cli_upload' });
    await h.api
      .put(`/api/v1/apps/${app.uuid}/variables`)
      .set(auth(ws.ownerToken))
      .send({ variables: [{ key: 'API_KEY', value: 'k-123456' }] })
      .expect(200);
    await h.api
      .put(`/api/v1/apps/${app.uuid}/secret_files`)
      .set(auth(ws.ownerToken))
      .send({ files: [{ name: 'cert.pem', content: 'PEM' }] })
      .expect(200);
    await h.api
      .put(`/api/v1/apps/${app.uuid}/security`)
      .set(auth(ws.ownerToken))
      .send({ private_access: true })
      .expect(200);
    const d = await deploy(app.uuid);
    expect(await result(app.uuid, d.uuid)).toBe('completed');
    return app;
  }
  const snapshot = async (uuid: string) => ({
    app: (await stack.ds.query(`SELECT * FROM apps WHERE uuid = $1`, [uuid]))[0],
    sim: (await stack.ds.query(`SELECT * FROM sim_apps WHERE app_uuid = $1`, [uuid]))[0],
    vols: await stack.ds.query(`SELECT * FROM sim_app_volumes WHERE app_uuid = $1`, [uuid]),
    vars: await stack.ds.query(`SELECT key, value_sealed FROM app_variables WHERE app_uuid = $1`, [uuid]),
  });

  it('CLN-01 CLN-02 CLN-03 clones with every body field; flags default false; the copy reads cloning, then runs', async () => {
    await h.ts.withWorker(async () => {
      const src = await source();
      const bare = await h.api.post(`/api/v1/apps/${src.uuid}/clone`).set(auth(ws.ownerToken)).send({});
      expect(bare.status).toBe(201);
      expect(bare.body.state).toBe('cloning');
      expect(bare.body.name).toMatch(new RegExp(`^${src.name.replace(/-[a-z0-9]{6}$/, '')}-[a-z0-9]{6}$`));
      await h.ts.client.workflow.getHandle(`app-clone/${bare.body.uuid}`).result();
      await eventually(async () => (await h.state(bare.body.uuid)) === 'running', { what: 'clone running' });
      // CLN-03: nothing optional was copied
      expect(await stack.ds.query(`SELECT 1 FROM app_variables WHERE app_uuid = $1`, [bare.body.uuid])).toEqual([]);
      expect(await stack.ds.query(`SELECT 1 FROM app_secret_files WHERE app_uuid = $1`, [bare.body.uuid])).toEqual([]);
      expect((await h.api.get(`/api/v1/apps/${bare.body.uuid}`).set(auth(ws.ownerToken))).body.private_access).toBe(
        false,
      );

      const project = (await h.api.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'clones' })).body
        .uuid;
      const full = await h.api.post(`/api/v1/apps/${src.uuid}/clone`).set(auth(ws.ownerToken)).send({
        label: 'Staging copy',
        name: 'staging',
        project_id: project,
        resource_id: ws.resourceUuid,
        use_parent_image: true,
        parent_image_auto_sync: true,
        clone_variables: true,
        clone_secret_files: true,
        clone_scaling_settings: true,
        clone_health_checks: true,
        clone_security: true,
        addons: [],
        cronjobs: [],
      });
      expect(full.status).toBe(201);
      expect(full.body).toMatchObject({
        label: 'Staging copy',
        service_name: 'staging',
        project_id: project,
        deployment_method: 'parent_image',
        state: 'cloning',
      });
      await h.ts.client.workflow.getHandle(`app-clone/${full.body.uuid}`).result();
      await eventually(async () => (await h.state(full.body.uuid)) === 'running', { what: 'clone running' });
      const vars = (await h.api.get(`/api/v1/apps/${full.body.uuid}/variables`).set(auth(ws.ownerToken))).body;
      expect(vars.map((v: any) => [v.key, v.value])).toEqual([['API_KEY', 'k-123456']]);
      expect(
        (await h.api.get(`/api/v1/apps/${full.body.uuid}/secret_files`).set(auth(ws.ownerToken))).body.map(
          (f: any) => f.name,
        ),
      ).toEqual(['cert.pem']);
      expect((await h.api.get(`/api/v1/apps/${full.body.uuid}`).set(auth(ws.ownerToken))).body.private_access).toBe(
        true,
      );
      const [srcSim, dstSim] = [(await snapshot(src.uuid)).sim, (await snapshot(full.body.uuid)).sim];
      expect(dstSim.image).toBe(srcSim.image);
      const [vol] = (await snapshot(full.body.uuid)).vols;
      expect(vol.source_volume_uuid).toBe(srcSim.volume_uuid);
      // the clone has its own app workflow
      expect(await h.ts.client.workflow.getHandle(`app/${full.body.uuid}`).query('state')).toMatch(/^supervising:/);
    });
  });

  it('CLN-02 CLN-03 clone_scaling_settings and clone_health_checks copy them (default: the defaults); use_parent_image shares the release; parent_image_auto_sync redeploys the clone when its parent deploys', async () => {
    await h.ts.withWorker(async () => {
      const src = await source();
      const owner = auth(ws.ownerToken);
      const checks = [
        { kind: 'readiness', protocol: 'http', path: '/ready', port: 8080, period_seconds: 5, failure_threshold: 2 },
      ];
      await h.api.put(`/api/v1/apps/${src.uuid}/health_checks`).set(owner).send({ health_checks: checks }).expect(200);
      await h.api
        .put(`/api/v1/apps/${src.uuid}/scaling_profile`)
        .set(owner)
        .send({ min_replicas: 2, max_replicas: 5, target_cpu_percent: 65 })
        .expect(200);
      const srcChecks = (await h.api.get(`/api/v1/apps/${src.uuid}/health_checks`).set(owner)).body;
      const srcScaling = (await h.api.get(`/api/v1/apps/${src.uuid}/scaling_profile`).set(owner)).body;
      const clone = async (body: Record<string, unknown>) => {
        const res = await h.api.post(`/api/v1/apps/${src.uuid}/clone`).set(owner).send(body).expect(201);
        await h.ts.client.workflow.getHandle(`app-clone/${res.body.uuid}`).result();
        await eventually(async () => (await h.state(res.body.uuid)) === 'running', { what: 'clone running' });
        return res.body.uuid as string;
      };
      const plain = await clone({});
      const copied = await clone({ clone_scaling_settings: true, clone_health_checks: true });
      const follower = await clone({ use_parent_image: true, parent_image_auto_sync: true });
      const pinned = await clone({ use_parent_image: true });

      const settings = async (uuid: string) => ({
        checks: (await h.api.get(`/api/v1/apps/${uuid}/health_checks`).set(owner)).body,
        scaling: (await h.api.get(`/api/v1/apps/${uuid}/scaling_profile`).set(owner)).body,
      });
      expect(await settings(copied)).toEqual({ checks: srcChecks, scaling: srcScaling });
      const defaults = await settings(plain);
      expect(defaults.checks).not.toEqual(srcChecks);
      expect(defaults.scaling).not.toEqual(srcScaling);

      // use_parent_image: the clones run the parent's release; a copy has its own
      const image = async (uuid: string) => (await snapshot(uuid)).sim.image as string;
      const first = await image(src.uuid);
      expect(await image(follower)).toBe(first);
      expect(await image(pinned)).toBe(first);
      const deployments = async (uuid: string) =>
        (await h.api.get(`/api/v1/apps/${uuid}/deployments`).set(owner)).body as Array<{ uuid: string; state: string }>;
      const before = {
        follower: (await deployments(follower)).length,
        pinned: (await deployments(pinned)).length,
        plain: (await deployments(plain)).length,
      };

      const d = await deploy(src.uuid);
      expect(await result(src.uuid, d.uuid)).toBe('completed');
      const second = await image(src.uuid);
      expect(second).not.toBe(first);
      const synced = await eventually(
        async () => {
          const list = await deployments(follower);
          return list.length > before.follower && list[0]!.state === 'completed' ? list[0] : undefined;
        },
        { what: 'the follower redeployed' },
      );
      expect(synced).toMatchObject({ deployment_method: 'parent_image', commit_sha: null });
      await eventually(async () => (await h.state(follower)) === 'running', { what: 'follower running' });
      expect(await image(follower)).toBe(second);
      // without auto sync, and for a clone not on the parent's image, nothing is deployed
      expect((await deployments(pinned)).length).toBe(before.pinned);
      expect(await image(pinned)).toBe(first);
      expect((await deployments(plain)).length).toBe(before.plain);
    });
  });

  it('CLN-02 add-ons and cron jobs must belong to the source app (422 naming the unknown uuids, nothing written)', async () => {
    const src = await h.api
      .post('/api/v1/apps')
      .set(auth(ws.ownerToken))
      .send({ name: 'addonless', resource_id: ws.resourceUuid });
    await stack.ds.query(`UPDATE apps SET state = 'running' WHERE uuid = $1`, [src.body.uuid]);
    const addon = randomUUID();
    const cron = randomUUID();
    const res = await h.api
      .post(`/api/v1/apps/${src.body.uuid}/clone`)
      .set(auth(ws.ownerToken))
      .send({ addons: [{ uuid: addon, clone_data: true }], cronjobs: [cron] });
    expect(res.status).toBe(422);
    expect(res.body.detail).toContain(addon);
    expect(res.body.detail).toContain(cron);
    expect((await stack.ds.query(`SELECT count(*)::int AS n FROM apps WHERE service_name = 'addonless'`))[0].n).toBe(1);
  });

  it('CLN-04 a target resource assigned to projects needs one of them as project_id; CLN-05 a resource another member created is fine', async () => {
    await h.ts.withWorker(async () => {
      const src = await runningApp('placed');
      const member = await memberWith(stack.ds, ws.uuid, 'ops', ['apps:manage']);
      const [{ region_id }] = await stack.ds.query(`SELECT region_id FROM compute_resources WHERE uuid = $1`, [
        ws.resourceUuid,
      ]);
      const theirs = await createResource(
        stack.ds,
        ws.uuid,
        region_id,
        `member-res-${Date.now()}`,
        BIG_PLAN,
        member.memberUuid,
      );
      const project = (
        await h.api
          .post('/api/v1/projects')
          .set(auth(ws.ownerToken))
          .send({ name: `assigned-${Date.now()}`, resource_ids: [theirs] })
      ).body.uuid;
      const other = (
        await h.api
          .post('/api/v1/projects')
          .set(auth(ws.ownerToken))
          .send({ name: `other-${Date.now()}` })
      ).body.uuid;
      expect(
        (await h.api.post(`/api/v1/apps/${src.uuid}/clone`).set(auth(ws.ownerToken)).send({ resource_id: theirs }))
          .status,
      ).toBe(422);
      expect(
        (
          await h.api
            .post(`/api/v1/apps/${src.uuid}/clone`)
            .set(auth(ws.ownerToken))
            .send({ resource_id: theirs, project_id: other })
        ).status,
      ).toBe(422);
      const ok = await h.api
        .post(`/api/v1/apps/${src.uuid}/clone`)
        .set(auth(ws.ownerToken))
        .send({ resource_id: theirs, project_id: project });
      expect(ok.status).toBe(201);
      expect(ok.body.platform.uuid).toBe(theirs);
      await h.ts.client.workflow.getHandle(`app-clone/${ok.body.uuid}`).result();
      await eventually(async () => (await h.state(ok.body.uuid)) === 'running', { what: 'clone running' });
    });
  });

  for (const step of ['apps.provision', 'apps.cloneImage', 'apps.cloneVolume', 'apps.start']) {
    it(`CLN-01 the clone saga undoes itself when ${step} fails: the source is untouched, no partial clone remains`, async () => {
      await h.ts.withWorker(async () => {
        const src = await source();
        const before = await snapshot(src.uuid);
        const apps = (await stack.ds.query(`SELECT count(*)::int AS n FROM apps`))[0].n;
        await SimulatedCore.injectFault(stack.ds, step, 1, { retryable: false, message: `${step} broke` });
        const res = await h.api.post(`/api/v1/apps/${src.uuid}/clone`).set(auth(ws.ownerToken)).send({
          clone_variables: true,
          clone_secret_files: true,
          clone_security: true,
          clone_scaling_settings: true,
          clone_health_checks: true,
        });
        expect(res.status).toBe(201);
        const outcome = await h.ts.client.workflow.getHandle(`app-clone/${res.body.uuid}`).result();
        expect(outcome).toEqual({ outcome: 'failed', reason: `${step} broke` });
        expect(await snapshot(src.uuid)).toEqual(before);
        const target = res.body.uuid;
        expect((await stack.ds.query(`SELECT count(*)::int AS n FROM apps`))[0].n).toBe(apps);
        for (const [table, column] of [
          ['apps', 'uuid'],
          ['sim_apps', 'app_uuid'],
          ['sim_app_volumes', 'app_uuid'],
          ['app_variables', 'app_uuid'],
          ['app_secret_files', 'app_uuid'],
          ['resource_allocations', 'owner_uuid'],
        ]) {
          expect(
            `${table}: ${(await stack.ds.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${column} = $1`, [target]))[0].n}`,
          ).toBe(`${table}: 0`);
        }
        expect((await h.api.get(`/api/v1/apps/${target}`).set(auth(ws.ownerToken))).status).toBe(404);
        await SimulatedCore.clearFaults(stack.ds);
      });
    });
  }
});
