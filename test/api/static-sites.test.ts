import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { createStaticSiteActivities } from '../../activities/static-sites';
import { seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { localRepo, type LocalRepo } from '../support/git';
import { startObjectStore } from '../support/object-store';
import { eventually, startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let ws: Workspace;
let store: Awaited<ReturnType<typeof startObjectStore>>;
let s3: S3Client;
const repos: LocalRepo[] = [];
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });

beforeAll(async () => {
  store = await startObjectStore();
  stack = await startStack({
    objectStore: store,
    env: { BERTH_GIT_ALLOW_FILE_URLS: '1', BERTH_SITES_DOMAIN: 'sites.test.localhost' },
  });
  ws = await seedWorkspace(stack.ds);
  await stack.startWorker();
  s3 = new S3Client({
    endpoint: store.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
  });
});
afterAll(async () => {
  await stack.close();
  await store.dispose();
  for (const r of repos) r.dispose();
});

function repo(files: Record<string, string>): LocalRepo {
  const r = localRepo(files);
  repos.push(r);
  return r;
}

async function siteState(uuid: string, states: string[]) {
  return eventually(
    async () => {
      const r = await stack.http.get(`/api/v1/static_sites/${uuid}`).set(auth(ws.ownerToken));
      return states.includes(r.body.state) && r.body;
    },
    { what: `site in ${states.join('/')}`, timeoutMs: 30_000 },
  );
}

async function events(siteUuid: string, atLeast = 0) {
  const query = () =>
    stack.ds.query(`SELECT type, payload FROM events WHERE app_uuid = $1 ORDER BY created_at, type DESC`, [siteUuid]);
  if (atLeast > 0) await eventually(async () => (await query()).length >= atLeast, { what: `${atLeast} events` });
  return query();
}

/** What the site serves: the route of its host and the objects under it on the store. */
async function served(name: string): Promise<Record<string, string>> {
  const [routeRow] = await stack.ds.query(
    `SELECT bucket_name, prefix, active FROM sim_storage_routes WHERE host = $1`,
    [`${name}.sites.test.localhost`],
  );
  expect(routeRow.active).toBe(true);
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: routeRow.bucket_name, Prefix: routeRow.prefix }));
  const out: Record<string, string> = {};
  for (const o of listed.Contents ?? []) {
    const got = await s3.send(new GetObjectCommand({ Bucket: routeRow.bucket_name, Key: o.Key! }));
    out[o.Key!.slice(routeRow.prefix.length)] = await got.Body!.transformToString();
  }
  return out;
}

describe('static sites', () => {
  it('SIT-01 SIT-02 SIT-07 SIT-08 a site is served under the name sent (no suffix), pending then assigned; its url is region-less', async () => {
    const res = await stack.http
      .post('/api/v1/static_sites')
      .set(auth(ws.ownerToken))
      .send({ name: 'docs-site', label: 'Docs' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'docs-site',
      label: 'Docs',
      state: 'pending',
      region: 'local',
      url: 'https://docs-site.sites.test.localhost',
      project_id: null,
    });
    expect(new URL(res.body.url).hostname.split('.')).not.toContain(res.body.region);
    const assigned = await siteState(res.body.uuid, ['assigned']);
    expect(assigned.name).toBe('docs-site');
    const taken = await stack.http.post('/api/v1/static_sites').set(auth(ws.ownerToken)).send({ name: 'docs-site' });
    expect(taken.status).toBe(409);
    expect(
      (await stack.http.post('/api/v1/static_sites').set(auth(ws.ownerToken)).send({ name: 'Docs_Site' })).status,
    ).toBe(400);
    expect(
      (
        await stack.http
          .post('/api/v1/static_sites')
          .set(auth(ws.ownerToken))
          .send({ name: 'elsewhere', region: 'mars-1' })
      ).status,
    ).toBe(422);
  });

  it('SIT-03 PUT /static/{uuid} takes label and project_id and returns the Static site; the served name never changes', async () => {
    const created = await stack.http.post('/api/v1/static_sites').set(auth(ws.ownerToken)).send({ name: 'marketing' });
    const project = await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'web' });
    const res = await stack.http
      .put(`/api/v1/static/${created.body.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ label: 'Marketing', project_id: project.body.uuid });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      uuid: created.body.uuid,
      name: 'marketing',
      label: 'Marketing',
      project_id: project.body.uuid,
      url: 'https://marketing.sites.test.localhost',
    });
    const rename = await stack.http
      .put(`/api/v1/static/${created.body.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ name: 'other' });
    expect(rename.status).toBe(400);
    expect((await stack.http.get(`/api/v1/static_sites/${created.body.uuid}`).set(auth(ws.ownerToken))).body.name).toBe(
      'marketing',
    );
    const back = await stack.http
      .put(`/api/v1/static/${created.body.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ project_id: null });
    expect(back.body.project_id).toBeNull();
  });

  it('SIT-04 SIT-06 SIT-02 PUT /static_sites/{uuid}/deployment changes the content source and deploys: deploying -> running, deploy_started/deploy_ended with data.app_id', async () => {
    const r = repo({ 'public/index.html': '<h1>v1</h1>', 'public/css/site.css': 'h1{}', 'README.md': 'not published' });
    const created = await stack.http.post('/api/v1/static_sites').set(auth(ws.ownerToken)).send({ name: 'blog' });
    await siteState(created.body.uuid, ['assigned']);
    const res = await stack.http
      .put(`/api/v1/static_sites/${created.body.uuid}/deployment`)
      .set(auth(ws.ownerToken))
      .send({ repository: r.url, branch: 'main', publish_directory: 'public', build_command: 'npm run build' });
    expect(res.status).toBe(202);
    expect(res.body.deployment_config).toEqual({
      type: 'git',
      repository: r.url,
      branch: 'main',
      build_command: 'npm run build',
      publish_directory: 'public',
      credential_id: null,
    });
    const running = await siteState(created.body.uuid, ['running', 'failed']);
    expect(running.state).toBe('running');
    expect(await served('blog')).toEqual({ 'index.html': '<h1>v1</h1>', 'css/site.css': 'h1{}' });
    const evs = await events(created.body.uuid, 2);
    expect(evs.map((e: { type: string }) => e.type)).toEqual(['deploy_started', 'deploy_ended']);
    const [started, ended] = evs.map((e: { payload: any }) => e.payload);
    expect(started.data.app_id).toBe(created.body.uuid);
    expect(ended.data).toMatchObject({ app_id: created.body.uuid, message: null, commit_sha: r.head() });
    const deployments = await stack.http
      .get(`/api/v1/static_sites/${created.body.uuid}/deployments`)
      .set(auth(ws.ownerToken));
    expect(deployments.body[0]).toMatchObject({
      state: 'completed',
      commit_sha: r.head(),
      file_count: 2,
      message: null,
    });

    // A new commit and another deploy replace the content (deploying passes on the way).
    r.commit({ 'public/index.html': '<h1>v2</h1>' }, { remove: ['public/css/site.css'] });
    await stack.http
      .put(`/api/v1/static_sites/${created.body.uuid}/deployment`)
      .set(auth(ws.ownerToken))
      .send({})
      .expect(202);
    await eventually(async () => (await events(created.body.uuid)).length === 4, { what: 'second deploy events' });
    expect(await served('blog')).toEqual({ 'index.html': '<h1>v2</h1>' });
    const latest = (
      await stack.http.get(`/api/v1/static_sites/${created.body.uuid}/deployments`).set(auth(ws.ownerToken))
    ).body[0].uuid;
    const handle = stack.temporal.workflow.getHandle(`static-site-deploy/${created.body.uuid}/${latest}`);
    expect(await handle.result()).toBe('running');
    expect(await handle.query('state')).toBe('running');
  });

  it('SIT-02 SIT-06 a failed deployment ends failed, with deploy_ended carrying the reason', async () => {
    const r = repo({ 'index.html': 'x' });
    const created = await stack.http
      .post('/api/v1/static_sites')
      .set(auth(ws.ownerToken))
      .send({ name: 'broken', deployment_config: { repository: r.url, branch: 'main', publish_directory: 'dist' } });
    expect(created.status).toBe(201);
    const failed = await siteState(created.body.uuid, ['failed', 'running']);
    expect(failed.state).toBe('failed');
    const evs = await events(created.body.uuid, 2);
    expect(evs.map((e: { type: string }) => e.type)).toEqual(['deploy_started', 'deploy_ended']);
    expect(evs[1].payload.data).toMatchObject({
      app_id: created.body.uuid,
      message: expect.stringContaining('publish_directory "dist" does not exist'),
    });
    // Fixing the source redeploys it to running.
    await stack.http
      .put(`/api/v1/static_sites/${created.body.uuid}/deployment`)
      .set(auth(ws.ownerToken))
      .send({ publish_directory: '.' })
      .expect(202);
    await eventually(async () => (await events(created.body.uuid)).length === 4, { what: 'redeploy events' });
    expect((await siteState(created.body.uuid, ['running'])).state).toBe('running');
  });

  it('SIT-05 bucket credentials of a site are never exposed', async () => {
    const r = repo({ 'index.html': 'hello' });
    const created = await stack.http
      .post('/api/v1/static_sites')
      .set(auth(ws.ownerToken))
      .send({ name: 'private-bits', deployment_config: { repository: r.url } });
    await siteState(created.body.uuid, ['running']);
    const [row] = await stack.ds.query(`SELECT content_bucket FROM static_sites WHERE uuid = $1`, [created.body.uuid]);
    const show = await stack.http.get(`/api/v1/static_sites/${created.body.uuid}`).set(auth(ws.ownerToken));
    expect(Object.keys(show.body).sort()).toEqual([
      'created_at',
      'deployment_config',
      'label',
      'name',
      'project_id',
      'region',
      'state',
      'updated_at',
      'url',
      'uuid',
    ]);
    expect(Object.keys(show.body.deployment_config).sort()).toEqual([
      'branch',
      'build_command',
      'credential_id',
      'publish_directory',
      'repository',
      'type',
    ]);
    for (const body of stack.responseBodies) {
      expect(body).not.toContain(row.content_bucket);
      expect(body).not.toContain(store.secretAccessKey);
      expect(body).not.toMatch(/s3_(access|secret)_key/);
    }
    // Nor is the site's bucket one of the workspace's buckets.
    const buckets = await stack.http.get('/api/v1/buckets').set(auth(ws.ownerToken));
    expect(buckets.body).toEqual([]);
  });

  it('deploy conflicts, permissions and deletion', async () => {
    const r = repo({ 'index.html': 'bye' });
    const created = await stack.http
      .post('/api/v1/static_sites')
      .set(auth(ws.ownerToken))
      .send({ name: 'short-lived', deployment_config: { repository: r.url } });
    expect(
      (await stack.http.put(`/api/v1/static_sites/${created.body.uuid}/deployment`).set(auth(ws.ownerToken)).send({}))
        .status,
    ).toBe(409);
    await siteState(created.body.uuid, ['running']);
    const operator = await tokenWith(stack.ds, ws.uuid, ['apps:operate']);
    const viewer = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    expect(
      (await stack.http.put(`/api/v1/static/${created.body.uuid}`).set(auth(viewer)).send({ label: 'x' })).status,
    ).toBe(403);
    expect(
      (await stack.http.put(`/api/v1/static/${created.body.uuid}`).set(auth(operator)).send({ label: 'x' })).status,
    ).toBe(200);
    expect(
      (
        await stack.http
          .put(`/api/v1/static_sites/${created.body.uuid}/deployment`)
          .set(auth(operator))
          .send({ repository: 'http://insecure.example.com/x' })
      ).status,
    ).toBe(422);
    expect((await stack.http.delete(`/api/v1/static_sites/${created.body.uuid}`).set(auth(operator))).status).toBe(403);
    await stack.http.delete(`/api/v1/static_sites/${created.body.uuid}`).set(auth(ws.ownerToken)).expect(204);
    expect((await stack.http.get(`/api/v1/static_sites/${created.body.uuid}`).set(auth(ws.ownerToken))).status).toBe(
      404,
    );
    await eventually(
      async () =>
        (await stack.ds.query(`SELECT 1 FROM sim_storage_routes WHERE host = 'short-lived.sites.test.localhost'`))
          .length === 0,
      { what: 'route removed' },
    );
  });

  it('SIT-02 starting a deployment is idempotent: a retried start answers true and moves nothing twice', async () => {
    const created = await stack.http.post('/api/v1/static_sites').set(auth(ws.ownerToken)).send({ name: 'idempotent' });
    await siteState(created.body.uuid, ['assigned']);
    const deploymentUuid = '00000000-0000-4000-8000-00000000d001';
    await stack.ds.query(`INSERT INTO static_site_deployments (uuid, site_uuid) VALUES ($1, $2)`, [
      deploymentUuid,
      created.body.uuid,
    ]);
    const acts = createStaticSiteActivities(stack.activityDeps);
    expect(await acts.startSiteDeployment(created.body.uuid, deploymentUuid)).toBe(true);
    expect(await acts.startSiteDeployment(created.body.uuid, deploymentUuid)).toBe(true);
    const [site] = await stack.ds.query(`SELECT state FROM static_sites WHERE uuid = $1`, [created.body.uuid]);
    expect(site.state).toBe('deploying');
    await acts.finishSiteDeployment(created.body.uuid, deploymentUuid, 'failed', 'stopped by the test');
    expect(await acts.startSiteDeployment(created.body.uuid, deploymentUuid)).toBe(false);
  });
});
