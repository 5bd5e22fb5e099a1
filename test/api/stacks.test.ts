import { SimulatedCore } from '../../activities/provider/simulated';
import { computeStackState } from '../../domain/stacks';
import { tableCounts } from '../support/db';
import { seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { fixture, localRepo, type LocalRepo } from '../support/git';
import { eventually, expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let ws: Workspace;
const repos: LocalRepo[] = [];
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });
const MIB = 2 ** 20;
const GIB = 2 ** 30;

beforeAll(async () => {
  stack = await startStack({ env: { BERTH_GIT_ALLOW_FILE_URLS: '1' } });
  ws = await seedWorkspace(stack.ds);
  await stack.startWorker();
});
afterAll(async () => {
  await stack.close();
  for (const r of repos) r.dispose();
});

function repo(files: Record<string, string>): LocalRepo {
  const r = localRepo(files);
  repos.push(r);
  return r;
}

const analyze = (body: Record<string, unknown>) =>
  stack.http.post('/api/v1/stacks/analyze').set(auth(ws.ownerToken)).send(body);

async function deployed(
  uuid: string,
  done: (s: any) => boolean = (s) => s.latest_deployment && ['completed', 'failed'].includes(s.latest_deployment.state),
) {
  return eventually(
    async () => {
      const r = await stack.http.get(`/api/v1/stacks/${uuid}`).set(auth(ws.ownerToken));
      return done(r.body) && r.body;
    },
    { what: 'stack deployment finished', timeoutMs: 60_000 },
  );
}

/** The phases the deployment workflow moved through, read from its history. */
async function phases(stackUuid: string, deploymentUuid: string): Promise<string[]> {
  const history = await stack.temporal.workflow.getHandle(`stack-deploy/${stackUuid}/${deploymentUuid}`).fetchHistory();
  const out: string[] = [];
  for (const e of history.events ?? []) {
    const a = e.activityTaskScheduledEventAttributes;
    if (!a) continue;
    const type = a.activityType?.name;
    const args = (a.input?.payloads ?? []).map((p) => JSON.parse(Buffer.from(p.data as Uint8Array).toString('utf8')));
    if (type === 'setStackDeploymentPhase') out.push(args[2]);
    if (type === 'finishStackDeployment') out.push(args[1]);
  }
  return out;
}

describe('stacks: analyze', () => {
  const cases: Array<{
    name: string;
    files: Record<string, string>;
    composePath?: string;
    expected: Record<string, unknown>;
  }> = [
    {
      name: 'an app from source, a worker image, postgres and redis add-ons, a volume, variables with and without defaults',
      files: { 'docker-compose.yml': fixture('web-postgres-cache.yaml') },
      expected: {
        manifest: {
          compose_file: 'docker-compose.yml',
          services: [
            {
              name: 'web',
              image: null,
              build: { context: './web', dockerfile: null },
              ports: [3000],
              depends_on: ['db', 'cache'],
              volumes: [],
              mounts: [],
              cpu_size: 0.5,
              ram_size: 512 * MIB,
            },
            {
              name: 'worker',
              image: 'ghcr.io/acme/worker:1.2',
              build: null,
              ports: [],
              depends_on: [],
              volumes: [],
              mounts: [],
              cpu_size: 1.5,
              ram_size: GIB,
            },
          ],
          addons: [
            {
              name: 'db',
              type: 'postgres',
              image: 'postgres:16-alpine',
              version: '16-alpine',
              volumes: ['pgdata'],
              cpu_size: 1,
              ram_size: GIB,
              disk_size: 5 * GIB,
            },
            {
              name: 'cache',
              type: 'valkey',
              image: 'redis:7',
              version: '7',
              volumes: [],
              cpu_size: 0.5,
              ram_size: 512 * MIB,
              disk_size: GIB,
            },
          ],
          volumes: [{ name: 'pgdata', services: ['db'], disk_size: GIB }],
          required_variables: ['DB_PASSWORD', 'SECRET_KEY_BASE'],
          optional_variables: [
            { name: 'LOG_LEVEL', default: 'info' },
            { name: 'QUEUE_NAME', default: 'default' },
          ],
        },
        warnings: [],
      },
    },
    {
      name: 'host networking, privileged, bind mounts and unsupported keys are warned about; $$ is no variable',
      files: { 'compose.yaml': fixture('warnings.yaml') },
      expected: {
        manifest: {
          compose_file: 'compose.yaml',
          services: [
            {
              name: 'proxy',
              image: 'nginx:1.27',
              build: null,
              ports: [],
              depends_on: [],
              volumes: [],
              mounts: [],
              cpu_size: 0.5,
              ram_size: 512 * MIB,
            },
            {
              name: 'agent',
              image: 'busybox:1.36',
              build: null,
              ports: [],
              depends_on: [],
              volumes: [],
              mounts: [],
              cpu_size: 0.5,
              ram_size: 512 * MIB,
            },
          ],
          addons: [
            {
              name: 'store',
              type: 'mysql',
              image: 'docker.io/library/mariadb:11',
              version: '11',
              volumes: ['data'],
              cpu_size: 1,
              ram_size: GIB,
              disk_size: 5 * GIB,
            },
          ],
          volumes: [{ name: 'data', services: ['store'], disk_size: GIB }],
          required_variables: [],
          optional_variables: [],
        },
        warnings: [
          { code: 'unsupported_key', service: null, key: 'networks', message: expect.any(String) },
          { code: 'host_network', service: 'proxy', key: 'network_mode', message: expect.any(String) },
          { code: 'bind_mount', service: 'proxy', key: 'volumes', message: expect.stringContaining('./nginx.conf') },
          {
            code: 'bind_mount',
            service: 'proxy',
            key: 'volumes',
            message: expect.stringContaining('/var/run/docker.sock'),
          },
          { code: 'privileged', service: 'agent', key: 'privileged', message: expect.any(String) },
          { code: 'unsupported_key', service: 'agent', key: 'cap_add', message: expect.any(String) },
        ],
      },
    },
    {
      name: 'compose_path names a directory; long port syntax; ${VAR:?message} is required; a valkey add-on',
      files: { 'deploy/compose.yml': fixture('nested.yml'), 'README.md': '# app\n' },
      composePath: 'deploy',
      expected: {
        manifest: {
          compose_file: 'deploy/compose.yml',
          services: [
            {
              name: 'api',
              image: null,
              build: { context: './api', dockerfile: 'Dockerfile.prod' },
              ports: [8000, 9090],
              depends_on: [],
              volumes: [],
              mounts: [],
              cpu_size: 0.5,
              ram_size: 512 * MIB,
            },
          ],
          addons: [
            {
              name: 'queue',
              type: 'valkey',
              image: 'valkey/valkey:8',
              version: '8',
              volumes: [],
              cpu_size: 0.5,
              ram_size: 512 * MIB,
              disk_size: GIB,
            },
          ],
          volumes: [],
          required_variables: ['API_TOKEN'],
          optional_variables: [],
        },
        warnings: [],
      },
    },
  ];

  for (const c of cases) {
    it(`STK-06 STK-07 ${c.name}`, async () => {
      const r = repo(c.files);
      const res = await analyze({
        repository_url: r.url,
        branch: 'main',
        ...(c.composePath ? { compose_path: c.composePath } : {}),
      });
      expect(res.status).toBe(200);
      expect(res.body.commit_sha).toMatch(/^[0-9a-f]{40}$/);
      expect(res.body).toEqual({ commit_sha: res.body.commit_sha, ...c.expected });
    });
  }

  it('STK-05 analyze takes repository_url, branch, compose_path (default .), resource_id, credential_id and creates nothing', async () => {
    const r = repo({ 'docker-compose.yaml': fixture('web-postgres-cache.yaml') });
    const cred = await stack.http
      .post('/api/v1/container_registry_credentials')
      .set(auth(ws.ownerToken))
      .send({ name: 'git-cred', registry: 'github', username: 'bot', token: 'ghp_gittokensecret0123456789' });
    const before = await tableCounts(stack.ds);
    const res = await analyze({
      repository_url: r.url,
      branch: 'main',
      resource_id: ws.resourceUuid,
      credential_id: cred.body.uuid,
    });
    expect(res.status).toBe(200);
    expect(res.body.manifest.compose_file).toBe('docker-compose.yaml');
    expect(await tableCounts(stack.ds)).toEqual(before);
    expect(
      (await analyze({ repository_url: r.url, branch: 'main', credential_id: '00000000-0000-4000-8000-000000000001' }))
        .status,
    ).toBe(422);
    expect(
      (await analyze({ repository_url: r.url, branch: 'main', resource_id: '00000000-0000-4000-8000-000000000001' }))
        .status,
    ).toBe(422);
    expectNoSecretLeaks(stack, ['ghp_gittokensecret0123456789']);
  });

  it('STK-06 a malformed compose file gives 422 with the parse error', async () => {
    const r = repo({ 'compose.yaml': fixture('malformed.yaml'), 'other/compose.yaml': fixture('no-image.yaml') });
    const res = await analyze({ repository_url: r.url, branch: 'main' });
    expect(res.status).toBe(422);
    expect(res.headers['content-type']).toMatch(/problem\+json/);
    expect(res.body.detail).toMatch(/^compose\.yaml: All mapping items must start at the same column at line 4/);
    const noImage = await analyze({ repository_url: r.url, branch: 'main', compose_path: 'other/compose.yaml' });
    expect(noImage.status).toBe(422);
    expect(noImage.body.detail).toContain('services.web has neither image nor build');
    expect((await analyze({ repository_url: r.url, branch: 'main', compose_path: 'missing' })).status).toBe(422);
    expect((await analyze({ repository_url: r.url, branch: 'main', compose_path: '../etc' })).status).toBe(400);
    expect((await analyze({ repository_url: r.url, branch: 'nope' })).body.detail).toMatch(/could not clone/);
  });

  it('STK-11 repository_url takes a public HTTPS Git URL or host/owner/repo; other schemes and embedded credentials are refused; warnings is an array', async () => {
    const r = repo({ 'compose.yaml': fixture('warnings.yaml') });
    const ok = await analyze({ repository_url: r.url, branch: 'main' });
    expect(Array.isArray(ok.body.warnings)).toBe(true);
    for (const bad of [
      'http://example.com/a/b.git',
      'ssh://git@example.com/a/b.git',
      'https://user:pw@example.com/a/b.git',
      'ext::sh -c touch% /tmp/pwned',
    ]) {
      const res = await analyze({ repository_url: bad, branch: 'main' });
      expect(res.status).toBe(422);
      expect(res.body.errors[0].path).toBe('body.repository_url');
    }
    // A code-hosting repository is read as https://host/owner/repo (no network here: the clone fails with 422, not a shape error).
    const hosted = await analyze({ repository_url: 'github.invalid/acme/shop', branch: 'main' });
    expect(hosted.status).toBe(422);
    expect(hosted.body.detail).toContain('https://github.invalid/acme/shop');
  });
});

describe('stacks: create and deploy', () => {
  it('STK-07 POST /stacks answers 422 when a required variable has no value, and writes nothing', async () => {
    const r = repo({ 'compose.yaml': fixture('web-postgres-cache.yaml') });
    const before = await tableCounts(stack.ds);
    const res = await stack.http
      .post('/api/v1/stacks')
      .set(auth(ws.ownerToken))
      .send({
        name: 'shop',
        resource_id: ws.resourceUuid,
        repository_url: r.url,
        branch: 'main',
        variables: { DB_PASSWORD: 'pw-123456' },
      });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([
      { path: 'body.variables.SECRET_KEY_BASE', message: 'required by the compose file' },
    ]);
    const unknown = await stack.http
      .post('/api/v1/stacks')
      .set(auth(ws.ownerToken))
      .send({
        name: 'shop',
        resource_id: ws.resourceUuid,
        repository_url: r.url,
        branch: 'main',
        variables: { DB_PASSWORD: 'x', SECRET_KEY_BASE: 'y', TYPO: 'z' },
      });
    expect(unknown.status).toBe(422);
    expect(await tableCounts(stack.ds)).toEqual(before);
  });

  it('STK-02 STK-03 STK-04 STK-09 STK-10 a stack deploys through validating, publishing, building, deploying to running, with materialized services', async () => {
    const r = repo({ 'compose.yaml': fixture('web-postgres-cache.yaml') });
    const secret = 'db-password-very-secret-42';
    const res = await stack.http
      .post('/api/v1/stacks')
      .set(auth(ws.ownerToken))
      .send({
        name: 'shop',
        label: 'Shop',
        resource_id: ws.resourceUuid,
        repository_url: r.url,
        branch: 'main',
        variables: { DB_PASSWORD: secret, SECRET_KEY_BASE: 'skb-also-very-secret-43' },
      });
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`/api/v1/stacks/${res.body.uuid}`);
    expect(res.body).toMatchObject({
      name: 'shop',
      label: 'Shop',
      state: 'pending',
      compose_path: '.',
      project_id: null,
      services: [],
    });
    expect(res.body.deployment_config).toEqual({
      type: 'git',
      repository: r.url,
      branch: 'main',
      auto_deploy_enabled: false,
      credential_id: null,
    });
    const s = await deployed(res.body.uuid);
    expect(s.state).toBe('running');
    const dep = s.latest_deployment;
    expect(Object.keys(dep).sort()).toEqual(
      [
        'commit_sha',
        'completed_at',
        'created_at',
        'published_at',
        'state',
        'subevent',
        'uuid',
        'validation_errors',
      ].sort(),
    );
    expect(dep).toMatchObject({ state: 'completed', commit_sha: r.head(), validation_errors: {} });
    expect(new Date(dep.published_at).getTime()).toBeLessThanOrEqual(new Date(dep.completed_at).getTime());
    expect(await phases(s.uuid, dep.uuid)).toEqual(['validating', 'publishing', 'building', 'deploying', 'completed']);
    expect(s.services).toEqual([
      {
        compose_service_name: 'web',
        compose_service_type: 'app',
        status: 'running',
        item_type: 'app',
        item_uuid: expect.any(String),
        item_name: expect.stringMatching(/^web-[0-9a-f]{6}$/),
      },
      {
        compose_service_name: 'worker',
        compose_service_type: 'app',
        status: 'running',
        item_type: 'app',
        item_uuid: expect.any(String),
        item_name: expect.stringMatching(/^worker-[0-9a-f]{6}$/),
      },
      {
        compose_service_name: 'cache',
        compose_service_type: 'valkey',
        status: 'running',
        item_type: 'addon',
        item_uuid: expect.any(String),
        item_name: 'Shop cache',
      },
      {
        compose_service_name: 'db',
        compose_service_type: 'postgres',
        status: 'running',
        item_type: 'addon',
        item_uuid: expect.any(String),
        item_name: 'Shop db',
      },
    ]);
    // App services are apps of the workspace, named with a suffix; their service_name is the compose name.
    const [web] = await stack.ds.query(`SELECT name, service_name, state, resource_uuid FROM apps WHERE uuid = $1`, [
      s.services[0].item_uuid,
    ]);
    expect(web).toEqual({
      name: s.services[0].item_name,
      service_name: 'web',
      state: 'running',
      resource_uuid: ws.resourceUuid,
    });
    // STK-09 totals: cores and bytes across services (web 0.5/512M, worker 1.5/1G, db 1/1G+5G+1G volume, cache 0.5/512M+1G).
    expect(s.total_cpu_size).toBe(3.5);
    expect(s.total_ram_size).toBe(3 * GIB);
    expect(s.total_disk_size).toBe(7 * GIB);
    const list = await stack.http.get('/api/v1/stacks').set(auth(ws.ownerToken));
    expect(list.body.find((x: { uuid: string }) => x.uuid === s.uuid)).toMatchObject({
      state: 'running',
      total_cpu_size: 3.5,
      latest_deployment: { uuid: dep.uuid },
    });
    expectNoSecretLeaks(stack, [secret, 'skb-also-very-secret-43']);
  });

  it('STK-01 a stack name is unique per workspace', async () => {
    const r = repo({ 'compose.yaml': fixture('warnings.yaml') });
    const body = { name: 'unique-one', resource_id: ws.resourceUuid, repository_url: r.url, branch: 'main' };
    expect((await stack.http.post('/api/v1/stacks').set(auth(ws.ownerToken)).send(body)).status).toBe(201);
    expect((await stack.http.post('/api/v1/stacks').set(auth(ws.ownerToken)).send(body)).status).toBe(409);
    const other = await seedWorkspace(stack.ds);
    expect(
      (
        await stack.http
          .post('/api/v1/stacks')
          .set(auth(other.ownerToken))
          .send({ ...body, resource_id: other.resourceUuid })
      ).status,
    ).toBe(201);
  });

  it('STK-02 STK-08 degraded when a service fails, failed when validation fails, stopped when every service is stopped; PUT deployment switches branch', async () => {
    const r = repo({ 'compose.yaml': fixture('warnings.yaml') });
    const created = await stack.http
      .post('/api/v1/stacks')
      .set(auth(ws.ownerToken))
      .send({ name: 'ops', resource_id: ws.resourceUuid, repository_url: r.url, branch: 'main' });
    const first = await deployed(created.body.uuid);
    expect(first.state).toBe('running');

    // degraded: one service cannot be rolled out.
    await SimulatedCore.injectFault(stack.ds, 'stacks.run_service', 1, {
      retryable: false,
      message: 'image pull failed',
    });
    const again = await stack.http.post(`/api/v1/stacks/${first.uuid}/deployments`).set(auth(ws.ownerToken)).send({});
    expect(again.status).toBe(202);
    expect(
      (await stack.http.post(`/api/v1/stacks/${first.uuid}/deployments`).set(auth(ws.ownerToken)).send({})).status,
    ).toBe(409);
    const degraded = await deployed(
      first.uuid,
      (s) => s.latest_deployment.uuid !== first.latest_deployment.uuid && s.latest_deployment.state === 'completed',
    );
    expect(degraded.state).toBe('degraded');
    expect(degraded.services.filter((x: { status: string }) => x.status === 'failed')).toHaveLength(1);

    // STK-08: the tracked branch, auto-deploy, repository and stored credential change through PUT .../deployment.
    const cred = await stack.http
      .post('/api/v1/container_registry_credentials')
      .set(auth(ws.ownerToken))
      .send({ name: 'ops-git', registry: 'gitlab', username: 'ops', token: 'glpat-opstoken-0123456789' });
    r.commit(
      { 'compose.yaml': `${fixture('warnings.yaml')}\nx-extra:\n  needs: \${NEW_REQUIRED}\n` },
      { branch: 'feature' },
    );
    const put = await stack.http
      .put(`/api/v1/stacks/${first.uuid}/deployment`)
      .set(auth(ws.ownerToken))
      .send({ branch: 'feature', auto_deploy_enabled: true, credential_id: cred.body.uuid, repository: r.url });
    expect(put.status).toBe(200);
    expect(put.body.deployment_config).toEqual({
      type: 'git',
      repository: r.url,
      branch: 'feature',
      auto_deploy_enabled: true,
      credential_id: cred.body.uuid,
    });
    expect(
      (
        await stack.http
          .put(`/api/v1/stacks/${first.uuid}/deployment`)
          .set(auth(ws.ownerToken))
          .send({ branch: '-bad' })
      ).status,
    ).toBe(400);
    expect(
      (
        await stack.http
          .put(`/api/v1/stacks/${first.uuid}/deployment`)
          .set(auth(ws.ownerToken))
          .send({ credential_id: '00000000-0000-4000-8000-000000000001' })
      ).status,
    ).toBe(422);

    // failed: the feature branch needs a variable the stack has no value for.
    await stack.http.post(`/api/v1/stacks/${first.uuid}/deployments`).set(auth(ws.ownerToken)).send({}).expect(202);
    const failed = await deployed(
      first.uuid,
      (s) => s.latest_deployment.uuid !== degraded.latest_deployment.uuid && s.latest_deployment.state === 'failed',
    );
    expect(failed.state).toBe('failed');
    expect(failed.latest_deployment.validation_errors).toEqual({
      variables: ['NEW_REQUIRED is required and has no value'],
    });
    expect(await phases(first.uuid, failed.latest_deployment.uuid)).toEqual(['validating', 'failed']);

    // With the value it runs again.
    await stack.http
      .post(`/api/v1/stacks/${first.uuid}/deployments`)
      .set(auth(ws.ownerToken))
      .send({ variables: { NEW_REQUIRED: 'now-set' } })
      .expect(202);
    const fixed = await deployed(
      first.uuid,
      (s) => s.latest_deployment.uuid !== failed.latest_deployment.uuid && s.latest_deployment.state === 'completed',
    );
    expect(fixed.state).toBe('running');
    expect(fixed.latest_deployment.commit_sha).toMatch(/^[0-9a-f]{40}$/);

    // stopped: every service stopped (apps stopped by their owners, add-ons stopped).
    await stack.ds.query(
      `UPDATE apps SET state = 'stopped' WHERE uuid IN (SELECT uuid FROM stack_items WHERE stack_uuid = $1)`,
      [first.uuid],
    );
    await stack.ds.query(`UPDATE stack_items SET status = 'stopped' WHERE stack_uuid = $1 AND item_type = 'addon'`, [
      first.uuid,
    ]);
    expect((await stack.http.get(`/api/v1/stacks/${first.uuid}`).set(auth(ws.ownerToken))).body.state).toBe('stopped');
    expectNoSecretLeaks(stack, ['glpat-opstoken-0123456789']);
  });

  it('STK-02 the computed state maps every deployment phase and service mix', () => {
    expect(computeStackState(null, [])).toBe('pending');
    for (const phase of ['validating', 'publishing', 'building', 'deploying'])
      expect(computeStackState({ state: phase }, ['running'])).toBe(phase);
    expect(computeStackState({ state: 'failed' }, ['running'])).toBe('failed');
    expect(computeStackState({ state: 'completed' }, ['running', 'healthy'])).toBe('running');
    expect(computeStackState({ state: 'completed' }, ['running', 'failed'])).toBe('degraded');
    expect(computeStackState({ state: 'completed' }, ['stopped', 'stopped'])).toBe('stopped');
  });

  it('DELETE /stacks/{uuid} removes the stack, its apps and allocations, and its services from the data plane', async () => {
    const r = repo({ 'compose.yaml': fixture('warnings.yaml') });
    const created = await stack.http
      .post('/api/v1/stacks')
      .set(auth(ws.ownerToken))
      .send({ name: 'doomed', resource_id: ws.resourceUuid, repository_url: r.url, branch: 'main' });
    const s = await deployed(created.body.uuid);
    const items = s.services.map((x: { item_uuid: string }) => x.item_uuid);
    expect(
      (await stack.ds.query(`SELECT 1 FROM sim_stack_services WHERE item_uuid = ANY($1::uuid[])`, [items])).length,
    ).toBe(3);
    await stack.http.delete(`/api/v1/stacks/${s.uuid}`).set(auth(ws.ownerToken)).expect(204);
    expect((await stack.http.get(`/api/v1/stacks/${s.uuid}`).set(auth(ws.ownerToken))).status).toBe(404);
    expect(await stack.ds.query(`SELECT 1 FROM apps WHERE uuid = ANY($1::uuid[])`, [items])).toEqual([]);
    expect(
      await stack.ds.query(`SELECT 1 FROM resource_allocations WHERE owner_uuid = ANY($1::uuid[])`, [items]),
    ).toEqual([]);
    await eventually(
      async () =>
        (await stack.ds.query(`SELECT 1 FROM sim_stack_services WHERE item_uuid = ANY($1::uuid[])`, [items])).length ===
        0,
      { what: 'services removed' },
    );
  });

  it('permissions: apps:view reads stacks, only apps:manage creates or analyzes', async () => {
    const viewer = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    expect((await stack.http.get('/api/v1/stacks').set(auth(viewer))).status).toBe(200);
    expect(
      (
        await stack.http
          .post('/api/v1/stacks/analyze')
          .set(auth(viewer))
          .send({ repository_url: 'https://example.com/a/b', branch: 'main' })
      ).status,
    ).toBe(403);
  });
});
