import { randomUUID } from 'node:crypto';
import { APP_STATES } from '../../domain/apps';
import { auth, BIG_PLAN, createApp, selfSigned } from '../support/apps';
import { createResource, memberWith, seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { tableCounts } from '../support/db';
import { expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let ws: Workspace;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
});
afterAll(() => stack.close());

describe('POST /apps and the App', () => {
  it('APP-01 APP-02 APP-03 name is the sent name plus a random suffix; service_name the sent name, valid only in internal_url', async () => {
    const a = await createApp(stack, ws.ownerToken, { name: 'web', resource_id: ws.resourceUuid, internal_port: 3000 });
    const b = await createApp(stack, ws.ownerToken, { name: 'web', resource_id: ws.resourceUuid });
    expect(a.name).toMatch(/^web-[a-z0-9]{6}$/);
    expect(b.name).toMatch(/^web-[a-z0-9]{6}$/);
    expect(a.name).not.toBe(b.name);
    expect(a.service_name).toBe('web');
    expect(a.internal_url).toBe('web:3000');
    expect(b.internal_url).toBe('web:8080');
    expect(a.public_url).not.toContain('://web.');
  });

  it("APP-04 public_url is built from the app name and its compute resource's region", async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'site', resource_id: ws.resourceUuid });
    const [region] = await stack.ds.query(
      `SELECT g.domain FROM regions g JOIN compute_resources c ON c.region_id = g.id WHERE c.uuid = $1`,
      [ws.resourceUuid],
    );
    expect(app.public_url).toBe(`https://${app.name}.${region.domain}`);
    const other = await seedWorkspace(stack.ds, { regionCode: 'eu-2' });
    const elsewhere = await createApp(stack, other.ownerToken, { name: 'site', resource_id: other.resourceUuid });
    expect(elsewhere.public_url).toBe(`https://${elsewhere.name}.eu-2.berth.localhost`);
    expect(elsewhere.region).toMatchObject({ code: 'eu-2' });
  });

  it('APP-10 APP-20 RES-01 GET /apps/{uuid} returns every App field with platform, region, addons and cronjobs', async () => {
    const created = await createApp(stack, ws.ownerToken, {
      name: 'full',
      label: 'Full app',
      resource_id: ws.resourceUuid,
    });
    const res = await stack.http.get(`/api/v1/apps/${created.uuid}`).set(auth(ws.ownerToken));
    expect(res.status).toBe(200);
    const app = res.body;
    expect(Object.keys(app).sort()).toEqual([
      'addons',
      'allow_connections',
      'basic_auth_enabled',
      'builder',
      'created_at',
      'cronjobs',
      'deployment_config',
      'deployment_method',
      'git_url',
      'internal_url',
      'label',
      'maintenance',
      'manage_dns_records',
      'name',
      'needs_redeploy',
      'platform',
      'private_access',
      'project_id',
      'public_url',
      'quota',
      'region',
      'service_name',
      'state',
      'updated_at',
      'uuid',
    ]);
    expect(app).toMatchObject({
      label: 'Full app',
      project_id: null,
      manage_dns_records: true,
      maintenance: false,
      private_access: false,
      allow_connections: true,
      basic_auth_enabled: false,
      addons: [],
      cronjobs: [],
      deployment_config: {},
    });
    expect(app.deployment_method).toBe('git_push');
    expect(app.git_url).toBe(`${stack.config.publicUrl}/git/${app.name}.git`);
    expect(typeof app.quota).toBe('object');
    expect(Number.isInteger(app.region.id)).toBe(true);
    expect(typeof app.region.name).toBe('string');
    expect(typeof app.region.code).toBe('string');
    expect(APP_STATES).toContain(app.state);
    expect(Object.keys(app.platform).sort()).toEqual([
      'assigned',
      'available_cpu_size',
      'available_disk_size',
      'available_ram_size',
      'components',
      'created_at',
      'labels',
      'name',
      'plan',
      'project_ids',
      'region',
      'state',
      'total_cpu_size',
      'total_disk_size',
      'total_ram_size',
      'total_used_cpu_size',
      'total_used_disk_size',
      'total_used_ram_size',
      'updated_at',
      'uuid',
    ]);
    expect(app.platform.uuid).toBe(ws.resourceUuid);
    expect(app.platform.labels).toEqual(['test']);
    expect(Object.keys(app.platform.plan).sort()).toEqual([
      'code_name',
      'cpu_size',
      'description',
      'disk_size',
      'name',
      'plan_type',
      'ram_size',
      'unit_price',
    ]);
    // the app's quota is held on the resource
    expect(app.platform.total_used_cpu_size).toBeGreaterThanOrEqual(app.quota.cpu_size);
    expect(app.platform.available_cpu_size).toBe(app.platform.total_cpu_size - app.platform.total_used_cpu_size);
    // the same App, to the millisecond, as the list reads it (another statement)
    const list = await stack.http.get('/api/v1/apps?per_page=100').set(auth(ws.ownerToken)).expect(200);
    expect(list.body.find((a: { uuid: string }) => a.uuid === app.uuid)).toEqual(app);
  });

  it('APP-09 custom domains are not part of the App: they are listed separately', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'nodomains', resource_id: ws.resourceUuid });
    expect(app).not.toHaveProperty('domains');
    expect(app).not.toHaveProperty('custom_domains');
  });

  it('APP-13 a new app starts pending, its workflow is started through the outbox', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'fresh', resource_id: ws.resourceUuid });
    expect(app.state).toBe('pending');
    const [op] = await stack.ds.query(`SELECT workflow_id, workflow_type FROM operations WHERE resource_uuid = $1`, [
      app.uuid,
    ]);
    expect(op).toEqual({ workflow_id: `app/${app.uuid}`, workflow_type: 'appLifecycle' });
  });

  it("APP-06 deployment_method takes only the contract's values; APP-07 builder auto, dockerfile or custom", async () => {
    for (const [method, config] of [
      ['git_push', {}],
      ['public_git', { repository: 'https://example.test/r.git' }],
      ['github', { repository: 'acme/web' }],
      ['cli_upload', {}],
    ] as const) {
      const app = await createApp(stack, ws.ownerToken, {
        name: 'm',
        resource_id: ws.resourceUuid,
        deployment_method: method,
        deployment_config: config,
        builder: 'dockerfile',
      });
      expect(app.deployment_method).toBe(method);
      expect(app.builder).toBe('dockerfile');
    }
    const bad = await stack.http
      .post('/api/v1/apps')
      .set(auth(ws.ownerToken))
      .send({ name: 'm', resource_id: ws.resourceUuid, deployment_method: 'ftp' });
    expect(bad.status).toBe(400);
    const badBuilder = await stack.http
      .post('/api/v1/apps')
      .set(auth(ws.ownerToken))
      .send({ name: 'm', resource_id: ws.resourceUuid, builder: 'magic' });
    expect(badBuilder.status).toBe(400);
  });

  it('REG-05 container_registry needs deployment_config.credential_id naming a credential of the same workspace (422 otherwise)', async () => {
    const other = await seedWorkspace(stack.ds);
    const mine = randomUUID();
    const theirs = randomUUID();
    for (const [uuid, w] of [
      [mine, ws.uuid],
      [theirs, other.uuid],
    ]) {
      await stack.ds.query(
        `INSERT INTO container_registry_credentials (uuid, workspace_uuid, name, registry, username, token_sealed) VALUES ($1, $2, 'reg', 'generic', 'u', $3)`,
        [uuid, w, stack.secretBox.seal('registry-token-123')],
      );
    }
    const body = (credential?: string) => ({
      name: 'img',
      resource_id: ws.resourceUuid,
      deployment_method: 'container_registry',
      deployment_config: { image: 'ghcr.io/acme/web:1.0', ...(credential ? { credential_id: credential } : {}) },
    });
    const before = await tableCounts(stack.ds);
    expect((await stack.http.post('/api/v1/apps').set(auth(ws.ownerToken)).send(body())).status).toBe(422);
    expect((await stack.http.post('/api/v1/apps').set(auth(ws.ownerToken)).send(body(theirs))).status).toBe(422);
    expect((await stack.http.post('/api/v1/apps').set(auth(ws.ownerToken)).send(body(randomUUID()))).status).toBe(422);
    expect(await tableCounts(stack.ds)).toEqual(before);
    const ok = await stack.http.post('/api/v1/apps').set(auth(ws.ownerToken)).send(body(mine));
    expect(ok.status).toBe(201);
    expect(ok.body.deployment_config).toEqual({ image: 'ghcr.io/acme/web:1.0', credential_id: mine });
  });

  it('APP-08 basic auth credentials are stored sealed and never returned', async () => {
    const password = 'correct-horse-battery';
    const app = await createApp(stack, ws.ownerToken, {
      name: 'locked',
      resource_id: ws.resourceUuid,
      basic_auth_enabled: true,
      basic_auth_username: 'admin-user',
      basic_auth_password: password,
    });
    expect(app.basic_auth_enabled).toBe(true);
    expect(JSON.stringify(app)).not.toContain('admin-user');
    const [row] = await stack.ds.query(`SELECT basic_auth_password_sealed FROM apps WHERE uuid = $1`, [app.uuid]);
    expect(row.basic_auth_password_sealed).toMatch(/^v1\./);
    expect(stack.secretBox.open(row.basic_auth_password_sealed)).toBe(password);
    const updated = await stack.http
      .put(`/api/v1/apps/${app.uuid}/security`)
      .set(auth(ws.ownerToken))
      .send({ basic_auth_username: 'other-user', basic_auth_password: 'another-password-1' });
    expect(updated.status).toBe(200);
    await stack.http.get(`/api/v1/apps/${app.uuid}`).set(auth(ws.ownerToken)).expect(200);
    await stack.http.get('/api/v1/apps').set(auth(ws.ownerToken)).expect(200);
    expectNoSecretLeaks(stack, [password, 'another-password-1', row.basic_auth_password_sealed]);
    const half = await stack.http
      .post('/api/v1/apps')
      .set(auth(ws.ownerToken))
      .send({ name: 'half', resource_id: ws.resourceUuid, basic_auth_enabled: true });
    expect(half.status).toBe(422);
  });

  it("APP-11 APP-12 POST /apps refuses a VPC or subnet that is not the workspace's (422, writes nothing)", async () => {
    const before = await tableCounts(stack.ds);
    for (const field of ['vpc_uuid', 'vpc_subnet_uuid']) {
      const res = await stack.http
        .post('/api/v1/apps')
        .set(auth(ws.ownerToken))
        .send({ name: 'v', resource_id: ws.resourceUuid, [field]: randomUUID() });
      expect(res.status).toBe(422);
    }
    expect(await tableCounts(stack.ds)).toEqual(before);
  });

  it('refuses a resource of another workspace, a quota the resource cannot hold, and a bad name', async () => {
    const other = await seedWorkspace(stack.ds);
    expect(
      (
        await stack.http
          .post('/api/v1/apps')
          .set(auth(ws.ownerToken))
          .send({ name: 'x', resource_id: other.resourceUuid })
      ).status,
    ).toBe(422);
    expect(
      (
        await stack.http
          .post('/api/v1/apps')
          .set(auth(ws.ownerToken))
          .send({ name: 'x', resource_id: ws.resourceUuid, quota: { cpu_size: 64 } })
      ).status,
    ).toBe(422);
    expect(
      (
        await stack.http
          .post('/api/v1/apps')
          .set(auth(ws.ownerToken))
          .send({ name: 'Bad_Name', resource_id: ws.resourceUuid })
      ).status,
    ).toBe(400);
  });

  it('CLN-04 (creation too) a resource assigned to projects takes only apps of one of them', async () => {
    const w = await seedWorkspace(stack.ds);
    const p1 = (
      await stack.http
        .post('/api/v1/projects')
        .set(auth(w.ownerToken))
        .send({ name: 'p1', resource_ids: [w.resourceUuid] })
    ).body.uuid;
    const p2 = (await stack.http.post('/api/v1/projects').set(auth(w.ownerToken)).send({ name: 'p2' })).body.uuid;
    expect(
      (await stack.http.post('/api/v1/apps').set(auth(w.ownerToken)).send({ name: 'a', resource_id: w.resourceUuid }))
        .status,
    ).toBe(422);
    expect(
      (
        await stack.http
          .post('/api/v1/apps')
          .set(auth(w.ownerToken))
          .send({ name: 'a', resource_id: w.resourceUuid, project_id: p2 })
      ).status,
    ).toBe(422);
    const ok = await stack.http
      .post('/api/v1/apps')
      .set(auth(w.ownerToken))
      .send({ name: 'a', resource_id: w.resourceUuid, project_id: p1 });
    expect(ok.status).toBe(201);
    expect(ok.body.project_id).toBe(p1);
  });
});

describe('GET /apps', () => {
  it('AUTH-04 apps:view lists apps newest first (GEN-05 array), filtered by project and state, paginated', async () => {
    const w = await seedWorkspace(stack.ds);
    const project = (await stack.http.post('/api/v1/projects').set(auth(w.ownerToken)).send({ name: 'grouped' })).body
      .uuid;
    const a = await createApp(stack, w.ownerToken, { name: 'one', resource_id: w.resourceUuid });
    const b = await createApp(stack, w.ownerToken, { name: 'two', resource_id: w.resourceUuid, project_id: project });
    const c = await createApp(stack, w.ownerToken, { name: 'three', resource_id: w.resourceUuid });
    await stack.ds.query(`UPDATE apps SET state = 'stopped' WHERE uuid = $1`, [c.uuid]);
    const viewer = await tokenWith(stack.ds, w.uuid, ['apps:view']);
    const all = await stack.http.get('/api/v1/apps').set(auth(viewer));
    expect(all.status).toBe(200);
    expect(all.body.map((x: any) => x.uuid)).toEqual([c.uuid, b.uuid, a.uuid]);
    expect(all.headers['x-total-count']).toBe('3');
    const byProject = await stack.http.get(`/api/v1/apps?project_id=${project}`).set(auth(viewer));
    expect(byProject.body.map((x: any) => x.uuid)).toEqual([b.uuid]);
    const stopped = await stack.http.get('/api/v1/apps?state=stopped').set(auth(viewer));
    expect(stopped.body.map((x: any) => x.uuid)).toEqual([c.uuid]);
    const page = await stack.http.get('/api/v1/apps?per_page=1&page=2').set(auth(viewer));
    expect(page.body.map((x: any) => x.uuid)).toEqual([b.uuid]);
    expect((await stack.http.get('/api/v1/apps?state=asleep').set(auth(viewer))).status).toBe(400);
    const noView = await tokenWith(stack.ds, w.uuid, ['apps:manage']);
    expect((await stack.http.get('/api/v1/apps').set(auth(noView))).status).toBe(403);
  });

  it('PRJ-04 apps in a project closed to the caller are hidden (404 and absent from lists)', async () => {
    const w = await seedWorkspace(stack.ds);
    const project = (await stack.http.post('/api/v1/projects').set(auth(w.ownerToken)).send({ name: 'closed' })).body
      .uuid;
    const app = await createApp(stack, w.ownerToken, {
      name: 'hidden',
      resource_id: w.resourceUuid,
      project_id: project,
    });
    const insider = await memberWith(stack.ds, w.uuid, 'insider', ['apps:view']);
    const outsider = await memberWith(stack.ds, w.uuid, 'outsider', ['apps:view', 'apps:manage', 'apps:deploy']);
    await stack.http
      .post(`/api/v1/projects/${project}/restrictions`)
      .set(auth(w.ownerToken))
      .send({ subject_type: 'role', role_name: 'insider' })
      .expect(201);
    expect((await stack.http.get(`/api/v1/apps/${app.uuid}`).set(auth(insider.token))).status).toBe(200);
    expect((await stack.http.get(`/api/v1/apps/${app.uuid}`).set(auth(outsider.token))).status).toBe(404);
    expect(
      (await stack.http.patch(`/api/v1/apps/${app.uuid}/state`).set(auth(outsider.token)).send({ action: 'stop' }))
        .status,
    ).toBe(404);
    expect((await stack.http.get('/api/v1/apps').set(auth(outsider.token))).body).toEqual([]);
  });
});

describe('updates', () => {
  let app: any;
  beforeAll(async () => {
    app = await createApp(stack, ws.ownerToken, { name: 'upd', resource_id: ws.resourceUuid });
  });

  it('AUTH-06 any of apps:deploy, apps:operate, apps:manage updates an app, its security, deployment settings, health checks and scaling profile', async () => {
    for (const permission of ['apps:deploy', 'apps:operate', 'apps:manage'] as const) {
      const token = await tokenWith(stack.ds, ws.uuid, [permission]);
      const label = `by ${permission}`;
      const res = await stack.http.put(`/api/v1/apps/${app.uuid}`).set(auth(token)).send({ label, maintenance: true });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ label, maintenance: true });
      expect(
        (await stack.http.patch(`/api/v1/apps/${app.uuid}`).set(auth(token)).send({ maintenance: false })).body
          .maintenance,
      ).toBe(false);
      expect(
        (await stack.http.put(`/api/v1/apps/${app.uuid}/security`).set(auth(token)).send({ private_access: true })).body
          .private_access,
      ).toBe(true);
      expect(
        (await stack.http.put(`/api/v1/apps/${app.uuid}/deployment`).set(auth(token)).send({ builder: 'custom' })).body
          .builder,
      ).toBe('custom');
      expect(
        (
          await stack.http
            .put(`/api/v1/apps/${app.uuid}/health_checks`)
            .set(auth(token))
            .send({ health_checks: [{ kind: 'readiness', protocol: 'http', path: '/healthz' }] })
        ).status,
      ).toBe(200);
      expect(
        (
          await stack.http
            .put(`/api/v1/apps/${app.uuid}/scaling_profile`)
            .set(auth(token))
            .send({ min_replicas: 1, max_replicas: 3, target_cpu_percent: 70 })
        ).body,
      ).toEqual({ min_replicas: 1, max_replicas: 3, target_cpu_percent: 70 });
    }
    const viewer = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    expect((await stack.http.put(`/api/v1/apps/${app.uuid}`).set(auth(viewer)).send({ label: 'no' })).status).toBe(403);
    const checks = await stack.http.get(`/api/v1/apps/${app.uuid}/health_checks`).set(auth(ws.ownerToken));
    expect(checks.body).toEqual([
      {
        kind: 'readiness',
        protocol: 'http',
        path: '/healthz',
        port: 8080,
        initial_delay_seconds: 0,
        period_seconds: 10,
        timeout_seconds: 5,
        failure_threshold: 3,
      },
    ]);
  });

  it('refuses rule-breaking settings with 422 and writes nothing', async () => {
    const before = await tableCounts(stack.ds);
    const [row] = await stack.ds.query(`SELECT scaling_profile, health_checks FROM apps WHERE uuid = $1`, [app.uuid]);
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${app.uuid}/scaling_profile`)
          .set(auth(ws.ownerToken))
          .send({ min_replicas: 4, max_replicas: 2 })
      ).status,
    ).toBe(422);
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${app.uuid}/health_checks`)
          .set(auth(ws.ownerToken))
          .send({ health_checks: [{ kind: 'liveness', protocol: 'http' }] })
      ).status,
    ).toBe(422);
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${app.uuid}/deployment`)
          .set(auth(ws.ownerToken))
          .send({ deployment_method: 'container_registry', deployment_config: { image: 'x/y:1' } })
      ).status,
    ).toBe(422);
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${app.uuid}/deployment`)
          .set(auth(ws.ownerToken))
          .send({ deployment_method: 'public_git', deployment_config: { repository: 'file:///etc' } })
      ).status,
    ).toBe(422);
    expect(await tableCounts(stack.ds)).toEqual(before);
    const [after] = await stack.ds.query(`SELECT scaling_profile, health_checks FROM apps WHERE uuid = $1`, [app.uuid]);
    expect(after).toEqual(row);
  });

  it('the free plan runs one replica', async () => {
    const w = await seedWorkspace(stack.ds, { plan: { plan_type: 'free' } });
    const free = await createApp(stack, w.ownerToken, { name: 'freebie', resource_id: w.resourceUuid });
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${free.uuid}/scaling_profile`)
          .set(auth(w.ownerToken))
          .send({ min_replicas: 1, max_replicas: 2, target_cpu_percent: 50 })
      ).status,
    ).toBe(422);
  });
});

describe('PATCH /apps/{uuid}/state', () => {
  it('AUTH-05 changing app state needs apps:deploy; moves the contract does not allow are 422', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'stateful', resource_id: ws.resourceUuid });
    const manage = await tokenWith(stack.ds, ws.uuid, ['apps:manage', 'apps:operate']);
    expect(
      (await stack.http.patch(`/api/v1/apps/${app.uuid}/state`).set(auth(manage)).send({ action: 'stop' })).status,
    ).toBe(403);
    const deploy = await tokenWith(stack.ds, ws.uuid, ['apps:deploy']);
    // still pending: nothing can be asked of it yet
    const early = await stack.http.patch(`/api/v1/apps/${app.uuid}/state`).set(auth(deploy)).send({ action: 'stop' });
    expect(early.status).toBe(422);
    await stack.ds.query(`UPDATE apps SET state = 'running' WHERE uuid = $1`, [app.uuid]);
    expect(
      (await stack.http.patch(`/api/v1/apps/${app.uuid}/state`).set(auth(deploy)).send({ action: 'start' })).status,
    ).toBe(422);
    const stop = await stack.http.patch(`/api/v1/apps/${app.uuid}/state`).set(auth(deploy)).send({ action: 'stop' });
    expect(stop.status).toBe(202);
    expect(stop.body.state).toBe('stop_scheduled');
    const [op] = await stack.ds.query(
      `SELECT workflow_type, args FROM operations WHERE resource_uuid = $1 AND workflow_type = 'appSendCommand'`,
      [app.uuid],
    );
    expect(op.args[0].command.action).toBe('stop');
    expect(
      (await stack.http.patch(`/api/v1/apps/${app.uuid}/state`).set(auth(deploy)).send({ action: 'fly' })).status,
    ).toBe(400);
  });

  it('APP-17 a sleeping app takes schedule_start and schedule_stop, and refuses start, stop and restart (422)', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'sleepy', resource_id: ws.resourceUuid });
    await stack.ds.query(`UPDATE apps SET state = 'sleeping' WHERE uuid = $1`, [app.uuid]);
    for (const action of ['start', 'stop', 'restart']) {
      expect(
        `${action} ${(await stack.http.patch(`/api/v1/apps/${app.uuid}/state`).set(auth(ws.ownerToken)).send({ action })).status}`,
      ).toBe(`${action} 422`);
    }
    const res = await stack.http
      .patch(`/api/v1/apps/${app.uuid}/state`)
      .set(auth(ws.ownerToken))
      .send({ action: 'schedule_stop' });
    expect(res.status).toBe(202);
    expect(res.body.state).toBe('stop_scheduled');
    await stack.ds.query(`UPDATE apps SET state = 'sleeping' WHERE uuid = $1`, [app.uuid]);
    const start = await stack.http
      .patch(`/api/v1/apps/${app.uuid}/state`)
      .set(auth(ws.ownerToken))
      .send({ action: 'schedule_start' });
    expect(start.status).toBe(202);
    expect(start.body.state).toBe('start_scheduled');
  });
});

describe('variables and secret files', () => {
  it('AUTH-07 apps:operate or apps:manage set many variables (sealed) and secret files whose content is never returned', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'vars', resource_id: ws.resourceUuid });
    const operate = await tokenWith(stack.ds, ws.uuid, ['apps:operate']);
    const manage = await tokenWith(stack.ds, ws.uuid, ['apps:manage']);
    const deploy = await tokenWith(stack.ds, ws.uuid, ['apps:deploy', 'apps:view']);
    const set = await stack.http
      .put(`/api/v1/apps/${app.uuid}/variables`)
      .set(auth(operate))
      .send({
        variables: [
          { key: 'DATABASE_URL', value: 'postgres://x' },
          { key: '_PRIVATE', value: '' },
        ],
      });
    expect(set.status).toBe(200);
    expect(set.body.map((v: any) => [v.key, v.value])).toEqual([
      ['DATABASE_URL', 'postgres://x'],
      ['_PRIVATE', ''],
    ]);
    const [row] = await stack.ds.query(
      `SELECT value_sealed FROM app_variables WHERE app_uuid = $1 AND key = 'DATABASE_URL'`,
      [app.uuid],
    );
    expect(row.value_sealed).not.toContain('postgres://x');
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${app.uuid}/variables`)
          .set(auth(manage))
          .send({ variables: [{ key: 'DATABASE_URL', value: 'postgres://y' }] })
      ).body.find((v: any) => v.key === 'DATABASE_URL').value,
    ).toBe('postgres://y');
    expect((await stack.http.get(`/api/v1/apps/${app.uuid}/variables`).set(auth(deploy))).status).toBe(403);
    for (const key of ['1ABC', 'A-B', 'A B', '']) {
      expect(
        (
          await stack.http
            .put(`/api/v1/apps/${app.uuid}/variables`)
            .set(auth(operate))
            .send({ variables: [{ key, value: 'v' }] })
        ).status,
      ).toBe(400);
    }
    expect((await stack.http.delete(`/api/v1/apps/${app.uuid}/variables/_PRIVATE`).set(auth(operate))).status).toBe(
      204,
    );
    expect((await stack.http.delete(`/api/v1/apps/${app.uuid}/variables/_PRIVATE`).set(auth(operate))).status).toBe(
      404,
    );

    const content = '-----BEGIN KEY-----\nsuper-secret-file-content-42\n-----END KEY-----\n';
    const files = await stack.http
      .put(`/api/v1/apps/${app.uuid}/secret_files`)
      .set(auth(manage))
      .send({ files: [{ name: 'service-account.json', content }] });
    expect(files.status).toBe(200);
    expect(files.body).toEqual([
      {
        uuid: expect.any(String),
        name: 'service-account.json',
        size_bytes: Buffer.byteLength(content),
        sha256: require('node:crypto').createHash('sha256').update(content).digest('hex'),
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
    ]);
    const listed = await stack.http.get(`/api/v1/apps/${app.uuid}/secret_files`).set(auth(operate));
    expect(JSON.stringify(listed.body)).not.toContain('super-secret');
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${app.uuid}/secret_files`)
          .set(auth(manage))
          .send({ files: [{ name: '../etc/passwd', content: 'x' }] })
      ).status,
    ).toBe(400);
    expectNoSecretLeaks(stack, ['super-secret-file-content-42']);
    expect(
      (await stack.http.delete(`/api/v1/apps/${app.uuid}/secret_files/${files.body[0].uuid}`).set(auth(operate)))
        .status,
    ).toBe(204);
  });
});

describe('TLS certificates', () => {
  it('AUTH-09 apps:manage adds a TLS certificate; the private key is sealed and never returned', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'tls', resource_id: ws.resourceUuid });
    const { certificate, privateKey } = selfSigned('shop.example.test');
    const operate = await tokenWith(stack.ds, ws.uuid, ['apps:operate', 'apps:deploy']);
    expect(
      (
        await stack.http
          .post(`/api/v1/apps/${app.uuid}/tls_certificates`)
          .set(auth(operate))
          .send({ certificate, private_key: privateKey })
      ).status,
    ).toBe(403);
    const manage = await tokenWith(stack.ds, ws.uuid, ['apps:manage']);
    const res = await stack.http
      .post(`/api/v1/apps/${app.uuid}/tls_certificates`)
      .set(auth(manage))
      .send({ certificate, private_key: privateKey });
    expect(res.status).toBe(201);
    expect(res.body.names).toEqual(['shop.example.test', 'www.shop.example.test']);
    expect(res.body.subject).toContain('shop.example.test');
    const other = selfSigned('other.example.test');
    expect(
      (
        await stack.http
          .post(`/api/v1/apps/${app.uuid}/tls_certificates`)
          .set(auth(manage))
          .send({ certificate, private_key: other.privateKey })
      ).status,
    ).toBe(422);
    expect(
      (
        await stack.http
          .post(`/api/v1/apps/${app.uuid}/tls_certificates`)
          .set(auth(manage))
          .send({ certificate: 'nope', private_key: privateKey })
      ).status,
    ).toBe(422);
    expect(
      (
        await stack.http
          .post(`/api/v1/apps/${app.uuid}/tls_certificates`)
          .set(auth(manage))
          .send({ certificate, private_key: privateKey })
      ).status,
    ).toBe(409);
    const keyLine = privateKey.split('\n')[5]!;
    expectNoSecretLeaks(stack, [keyLine]);
    expect(
      (await stack.http.delete(`/api/v1/apps/${app.uuid}/tls_certificates/${res.body.uuid}`).set(auth(manage))).status,
    ).toBe(204);
  });
});

describe('AUTH-09 creation and cloning need apps:manage', () => {
  it('AUTH-09 POST /apps and POST /apps/{uuid}/clone answer 403 without apps:manage', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'guarded', resource_id: ws.resourceUuid });
    const others = await tokenWith(stack.ds, ws.uuid, ['apps:view', 'apps:deploy', 'apps:operate']);
    expect(
      (await stack.http.post('/api/v1/apps').set(auth(others)).send({ name: 'x', resource_id: ws.resourceUuid }))
        .status,
    ).toBe(403);
    expect((await stack.http.post(`/api/v1/apps/${app.uuid}/clone`).set(auth(others)).send({})).status).toBe(403);
    const manage = await tokenWith(stack.ds, ws.uuid, ['apps:manage']);
    expect(
      (await stack.http.post('/api/v1/apps').set(auth(manage)).send({ name: 'x', resource_id: ws.resourceUuid }))
        .status,
    ).toBe(201);
  });

  it('the resource created by another member is usable (createResource fixture)', async () => {
    const member = await memberWith(stack.ds, ws.uuid, 'builder', ['apps:manage']);
    const [{ id }] = await stack.ds.query(`SELECT region_id AS id FROM compute_resources WHERE uuid = $1`, [
      ws.resourceUuid,
    ]);
    const theirs = await createResource(stack.ds, ws.uuid, id, `theirs-${Date.now()}`, {}, member.memberUuid);
    expect(
      (await stack.http.post('/api/v1/apps').set(auth(ws.ownerToken)).send({ name: 'on-theirs', resource_id: theirs }))
        .status,
    ).toBe(201);
  });
});
