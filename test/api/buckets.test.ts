import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SimulatedCore } from '../../activities/provider/simulated';
import { memberWith, seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { startObjectStore } from '../support/object-store';
import { eventually, expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let ws: Workspace;
let store: Awaited<ReturnType<typeof startObjectStore>>;
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });
const GIB = 2 ** 30;

beforeAll(async () => {
  store = await startObjectStore();
  stack = await startStack({ objectStore: store });
  ws = await seedWorkspace(stack.ds);
  await stack.startWorker();
});
afterAll(async () => {
  await stack.close();
  await store.dispose();
});

async function createActive(body: Record<string, unknown> = {}) {
  const res = await stack.http
    .post('/api/v1/buckets')
    .set(auth(ws.ownerToken))
    .send({ label: 'Media files', resource_id: ws.resourceUuid, ...body });
  expect(res.status).toBe(201);
  await eventually(
    async () =>
      (await stack.http.get(`/api/v1/buckets/${res.body.uuid}`).set(auth(ws.ownerToken))).body.state === 'active',
    { what: 'bucket active' },
  );
  return res.body;
}

function clientFor(b: { s3_endpoint: string; s3_access_key: string; s3_secret_key: string }) {
  return new S3Client({
    endpoint: b.s3_endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: b.s3_access_key, secretAccessKey: b.s3_secret_key },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

const upload = (uuid: string, key: string, text: string, token = ws.ownerToken) =>
  stack.http
    .post(`/api/v1/buckets/${uuid}/objects`)
    .set(auth(token))
    .send({ key, content_base64: Buffer.from(text).toString('base64'), content_type: 'text/plain' });

describe('buckets', () => {
  it('BKT-05 BKT-12 BKT-01 POST /buckets returns the Bucket in state pending; a workflow makes it active on the object store', async () => {
    const res = await stack.http
      .post('/api/v1/buckets')
      .set(auth(ws.ownerToken))
      .send({ label: 'Backups', resource_id: ws.resourceUuid, visibility: 'private_access', disk_size: 3 });
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`/api/v1/buckets/${res.body.uuid}`);
    expect(res.headers.deprecation).toBeUndefined();
    expect(res.body).toMatchObject({
      label: 'Backups',
      state: 'pending',
      visibility: 'private_access',
      s3_endpoint: store.endpoint,
      region_code: 'local',
      disk_size: 3,
      quota_bytes: 3 * GIB,
      usage_bytes: 0,
      object_count: 0,
      usage_percentage: 0,
      public_endpoint: null,
      platform: { uuid: ws.resourceUuid },
    });
    expect(res.body.name).toMatch(/^backups-[0-9a-f]{8}$/);
    for (const f of ['usage_bytes', 'quota_bytes', 'object_count']) expect(Number.isInteger(res.body[f])).toBe(true);
    expect(typeof res.body.usage_percentage).toBe('number');
    const active = await eventually(
      async () => {
        const r = await stack.http.get(`/api/v1/buckets/${res.body.uuid}`).set(auth(ws.ownerToken));
        return r.body.state === 'active' && r.body;
      },
      { what: 'bucket active' },
    );
    expect(active.state).toBe('active');
    // The bucket exists on the real store.
    const s3 = clientFor({ ...res.body, s3_access_key: store.accessKeyId, s3_secret_key: store.secretAccessKey });
    await expect(s3.send(new ListObjectsV2Command({ Bucket: res.body.name }))).resolves.toBeDefined();
    // Its disk allocation is held on the compute resource.
    const resource = await stack.http.get(`/api/v1/resources/${ws.resourceUuid}`).set(auth(ws.ownerToken));
    expect(resource.body.total_used_disk_size).toBeGreaterThanOrEqual(3 * GIB);
  });

  it('BKT-01 a bucket the object store refuses ends failed', async () => {
    await SimulatedCore.injectFault(stack.ds, 'storage.create_bucket', 1, {
      retryable: false,
      message: 'quota exhausted on the store',
    });
    const res = await stack.http
      .post('/api/v1/buckets')
      .set(auth(ws.ownerToken))
      .send({ label: 'doomed', resource_id: ws.resourceUuid });
    expect(res.status).toBe(201);
    const failed = await eventually(
      async () => {
        const r = await stack.http.get(`/api/v1/buckets/${res.body.uuid}`).set(auth(ws.ownerToken));
        return r.body.state === 'failed' && r.body;
      },
      { what: 'bucket failed' },
    );
    expect(failed.usage_bytes).toBe(0);
    const [row] = await stack.ds.query(`SELECT failure_reason FROM buckets WHERE uuid = $1`, [res.body.uuid]);
    expect(row.failure_reason).toContain('quota exhausted on the store');
  });

  it('BKT-01 a blocked bucket keeps its state and refuses object changes', async () => {
    const b = await createActive({ label: 'blocked one' });
    await stack.ds.query(`UPDATE buckets SET state = 'blocked' WHERE uuid = $1`, [b.uuid]);
    const show = await stack.http.get(`/api/v1/buckets/${b.uuid}`).set(auth(ws.ownerToken));
    expect(show.body.state).toBe('blocked');
    expect((await upload(b.uuid, 'a.txt', 'x')).status).toBe(409);
  });

  it('BKT-06 platform_id is accepted as the deprecated alias of resource_id, with a Deprecation header', async () => {
    const res = await stack.http
      .post('/api/v1/buckets')
      .set(auth(ws.ownerToken))
      .send({ label: 'legacy', platform_id: ws.resourceUuid });
    expect(res.status).toBe(201);
    expect(res.body.platform.uuid).toBe(ws.resourceUuid);
    expect(res.headers.deprecation).toMatch(/^@\d+$/);
    expect(res.headers.link).toContain('rel="deprecation"');
    const both = await stack.http
      .post('/api/v1/buckets')
      .set(auth(ws.ownerToken))
      .send({ label: 'legacy2', platform_id: ws.resourceUuid, resource_id: '00000000-0000-4000-8000-000000000001' });
    expect(both.status).toBe(422);
    const none = await stack.http.post('/api/v1/buckets').set(auth(ws.ownerToken)).send({ label: 'nowhere' });
    expect(none.status).toBe(422);
    const foreign = await stack.http
      .post('/api/v1/buckets')
      .set(auth(ws.ownerToken))
      .send({ label: 'foreign', resource_id: '00000000-0000-4000-8000-000000000001' });
    expect(foreign.status).toBe(422);
  });

  it('BKT-07 project_id omitted leaves the bucket unassigned (never inferred); CLN-04 PRV-09 a resource assigned to projects refuses it', async () => {
    const res = await stack.http
      .post('/api/v1/buckets')
      .set(auth(ws.ownerToken))
      .send({ label: 'loose', resource_id: ws.resourceUuid });
    expect(res.status).toBe(201);
    expect(res.body.project_id).toBeNull();
    const project = await stack.http
      .post('/api/v1/projects')
      .set(auth(ws.ownerToken))
      .send({ name: 'media', resource_ids: [ws.resourceUuid] });
    const refused = await stack.http
      .post('/api/v1/buckets')
      .set(auth(ws.ownerToken))
      .send({ label: 'stray', resource_id: ws.resourceUuid });
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toEqual([
      { path: 'body.project_id', message: expect.stringContaining(project.body.uuid) },
    ]);
    const assigned = await stack.http
      .post('/api/v1/buckets')
      .set(auth(ws.ownerToken))
      .send({ label: 'tied', resource_id: ws.resourceUuid, project_id: project.body.uuid });
    expect(assigned.body.project_id).toBe(project.body.uuid);
    await stack.http
      .put(`/api/v1/projects/${project.body.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ resource_ids: [] })
      .expect(200);
  });

  it('BKT-02 BKT-03 visibility is public_access or private_access; only public buckets have an HTTPS public_endpoint', async () => {
    const bad = await stack.http
      .post('/api/v1/buckets')
      .set(auth(ws.ownerToken))
      .send({ label: 'x', resource_id: ws.resourceUuid, visibility: 'public' });
    expect(bad.status).toBe(400);
    const pub = await stack.http
      .post('/api/v1/buckets')
      .set(auth(ws.ownerToken))
      .send({ label: 'site assets', resource_id: ws.resourceUuid, visibility: 'public_access' });
    expect(pub.body.public_endpoint).toBe(`https://${pub.body.name}.storage.local.berth.localhost`);
    const priv = await stack.http
      .post('/api/v1/buckets')
      .set(auth(ws.ownerToken))
      .send({ label: 'secrets', resource_id: ws.resourceUuid });
    expect(priv.body.visibility).toBe('private_access');
    expect(priv.body.public_endpoint).toBeNull();
    const flipped = await stack.http
      .put(`/api/v1/buckets/${priv.body.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ visibility: 'public_access' });
    expect(flipped.body.public_endpoint).toMatch(/^https:\/\//);
  });

  it('BKT-11 policy and acl are JSON strings; a policy that is not a JSON object is refused', async () => {
    const b = await createActive({ label: 'policy', visibility: 'public_access' });
    expect(typeof b.policy).toBe('string');
    expect(typeof b.acl).toBe('string');
    expect(JSON.parse(b.policy).Statement[0]).toMatchObject({ Effect: 'Allow', Action: ['s3:GetObject'] });
    expect(JSON.parse(b.acl).Grants.map((g: { Permission: string }) => g.Permission)).toEqual(['FULL_CONTROL', 'READ']);
    const policy = JSON.stringify({ Version: '2012-10-17', Statement: [] });
    const ok = await stack.http.put(`/api/v1/buckets/${b.uuid}`).set(auth(ws.ownerToken)).send({ policy });
    expect(ok.status).toBe(200);
    expect(ok.body.policy).toBe(policy);
    expect(
      (await stack.http.put(`/api/v1/buckets/${b.uuid}`).set(auth(ws.ownerToken)).send({ policy: '{"Statement":' }))
        .status,
    ).toBe(400);
    expect(
      (await stack.http.put(`/api/v1/buckets/${b.uuid}`).set(auth(ws.ownerToken)).send({ policy: '[1]' })).status,
    ).toBe(400);
  });

  it("BKT-04 the bucket's s3_access_key and s3_secret_key give an S3 client access on s3_endpoint; deletion revokes them", async () => {
    const b = await createActive({ label: 'client access' });
    expect(b.s3_access_key).toMatch(/^BRT[0-9A-F]{20}$/);
    expect(b.s3_secret_key.length).toBeGreaterThanOrEqual(40);
    const s3 = clientFor(b);
    await s3.send(new PutObjectCommand({ Bucket: b.name, Key: 'hello.txt', Body: 'hi from a client' }));
    const got = await s3.send(new GetObjectCommand({ Bucket: b.name, Key: 'hello.txt' }));
    expect(await got.Body!.transformToString()).toBe('hi from a client');
    const stranger = clientFor({ ...b, s3_access_key: 'BRTNOTAKEY000000000000' });
    await expect(stranger.send(new ListObjectsV2Command({ Bucket: b.name }))).rejects.toMatchObject({
      name: 'AccessDenied',
    });
    await stack.http.delete(`/api/v1/buckets/${b.uuid}`).set(auth(ws.ownerToken)).expect(204);
    expect((await stack.http.get(`/api/v1/buckets/${b.uuid}`).set(auth(ws.ownerToken))).status).toBe(404);
    await eventually(
      async () => {
        try {
          await s3.send(new ListObjectsV2Command({ Bucket: b.name }));
          return false;
        } catch (err) {
          return (err as { name: string }).name === 'AccessDenied';
        }
      },
      { what: 'key revoked' },
    );
    const admin = clientFor({ ...b, s3_access_key: store.accessKeyId, s3_secret_key: store.secretAccessKey });
    await eventually(
      async () => {
        try {
          await admin.send(new ListObjectsV2Command({ Bucket: b.name }));
          return false;
        } catch (err) {
          return (err as { name: string }).name === 'NoSuchBucket';
        }
      },
      { what: 'bucket removed from the store' },
    );
  });

  it('BKT-08 GET /buckets/{uuid} includes connection details and statistics counted on the object store', async () => {
    const b = await createActive({ label: 'stats', disk_size: 1 });
    await upload(b.uuid, 'a.txt', 'a'.repeat(1000)).expect(201);
    await upload(b.uuid, 'dir/b.txt', 'b'.repeat(24)).expect(201);
    // An object written straight to the store counts as well.
    await clientFor(b).send(new PutObjectCommand({ Bucket: b.name, Key: 'direct.bin', Body: Buffer.alloc(2000) }));
    const show = await stack.http.get(`/api/v1/buckets/${b.uuid}`).set(auth(ws.ownerToken));
    expect(show.body).toMatchObject({
      s3_endpoint: store.endpoint,
      s3_access_key: b.s3_access_key,
      s3_secret_key: b.s3_secret_key,
      usage_bytes: 3024,
      object_count: 3,
      quota_bytes: GIB,
    });
    expect(show.body.usage_percentage).toBeCloseTo(Math.round((3024 / GIB) * 10000) / 100);
    const list = await stack.http.get('/api/v1/buckets').set(auth(ws.ownerToken));
    expect(Array.isArray(list.body)).toBe(true);
    const listed = list.body.find((x: { uuid: string }) => x.uuid === b.uuid);
    expect(listed).toMatchObject({ usage_bytes: 3024, object_count: 3 });
    expect(listed).not.toHaveProperty('s3_secret_key');
    expect(list.headers['x-total-count']).toBeDefined();
  });

  it('BKT-09 PUT /buckets/{uuid} changes settings including the disk allocation', async () => {
    const b = await createActive({ label: 'grow' });
    const res = await stack.http
      .put(`/api/v1/buckets/${b.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ label: 'grown', disk_size: 5 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ label: 'grown', disk_size: 5, quota_bytes: 5 * GIB, name: b.name });
    const [alloc] = await stack.ds.query(`SELECT disk_size FROM resource_allocations WHERE owner_uuid = $1`, [b.uuid]);
    expect(Number(alloc.disk_size)).toBe(5 * GIB);
    const tooBig = await stack.http
      .put(`/api/v1/buckets/${b.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ disk_size: 100_000 });
    expect(tooBig.status).toBe(422);
    expect((await stack.http.get(`/api/v1/buckets/${b.uuid}`).set(auth(ws.ownerToken))).body.disk_size).toBe(5);
    expect(
      (await stack.http.put(`/api/v1/buckets/${b.uuid}`).set(auth(ws.ownerToken)).send({ disk_size: 0 })).status,
    ).toBe(400);
    expect(
      (await stack.http.put(`/api/v1/buckets/${b.uuid}`).set(auth(ws.ownerToken)).send({ disk_size: '2' })).status,
    ).toBe(400);
  });

  it('uploads, renames and deletes objects on the store', async () => {
    const b = await createActive({ label: 'objects' });
    const up = await upload(b.uuid, 'docs/readme.md', '# hello');
    expect(up.status).toBe(201);
    expect(up.body).toMatchObject({ key: 'docs/readme.md', size: 7 });
    const renamed = await stack.http
      .post(`/api/v1/buckets/${b.uuid}/objects/rename`)
      .set(auth(ws.ownerToken))
      .send({ key: 'docs/readme.md', new_key: 'docs/README.md' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.key).toBe('docs/README.md');
    const listed = await stack.http.get(`/api/v1/buckets/${b.uuid}/objects?prefix=docs/`).set(auth(ws.ownerToken));
    expect(listed.body.map((o: { key: string }) => o.key)).toEqual(['docs/README.md']);
    expect(
      (
        await stack.http
          .post(`/api/v1/buckets/${b.uuid}/objects/rename`)
          .set(auth(ws.ownerToken))
          .send({ key: 'nope', new_key: 'x' })
      ).status,
    ).toBe(404);
    await upload(b.uuid, 'other', 'x').expect(201);
    expect(
      (
        await stack.http
          .post(`/api/v1/buckets/${b.uuid}/objects/rename`)
          .set(auth(ws.ownerToken))
          .send({ key: 'other', new_key: 'docs/README.md' })
      ).status,
    ).toBe(409);
    await stack.http
      .delete(`/api/v1/buckets/${b.uuid}/objects?key=${encodeURIComponent('docs/README.md')}`)
      .set(auth(ws.ownerToken))
      .expect(204);
    expect(
      (await stack.http.delete(`/api/v1/buckets/${b.uuid}/objects?key=docs/README.md`).set(auth(ws.ownerToken))).status,
    ).toBe(404);
    expect((await upload(b.uuid, '../escape', 'x')).status).toBe(400);
    expect(
      (
        await stack.http
          .post(`/api/v1/buckets/${b.uuid}/objects`)
          .set(auth(ws.ownerToken))
          .send({ key: 'k', content_base64: 'not base64!' })
      ).status,
    ).toBe(400);
  });

  it('BKT-10 POST .../objects/download_url returns a presigned link that downloads the object from the real store, and expires', async () => {
    const b = await createActive({ label: 'downloads' });
    await upload(b.uuid, 'report 2024.csv', 'a,b\n1,2\n').expect(201);
    const res = await stack.http
      .post(`/api/v1/buckets/${b.uuid}/objects/download_url`)
      .set(auth(ws.ownerToken))
      .send({ key: 'report 2024.csv' });
    expect(res.status).toBe(200);
    const url = new URL(res.body.url);
    expect(`${url.protocol}//${url.host}`).toBe(store.endpoint);
    expect(url.searchParams.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(url.searchParams.get('X-Amz-Expires')).toBe('3600');
    expect(new Date(res.body.expires_at).getTime()).toBeGreaterThan(Date.now() + 3500_000);
    const download = await fetch(res.body.url);
    expect(download.status).toBe(200);
    expect(await download.text()).toBe('a,b\n1,2\n');
    // Without the signature the store does not know who asks; with an expired one it refuses.
    const short = await stack.http
      .post(`/api/v1/buckets/${b.uuid}/objects/download_url`)
      .set(auth(ws.ownerToken))
      .send({ key: 'report 2024.csv', expires_in: 1 });
    await new Promise((r) => setTimeout(r, 2100));
    const expired = await fetch(short.body.url);
    expect(expired.status).toBe(403);
    expect(await expired.text()).toContain('Request has expired');
    expect(
      (
        await stack.http
          .post(`/api/v1/buckets/${b.uuid}/objects/download_url`)
          .set(auth(ws.ownerToken))
          .send({ key: 'missing' })
      ).status,
    ).toBe(404);
  });

  it('AUTH-11 buckets:view makes a download link; buckets:operate updates the bucket (disk too) and uploads, renames, deletes objects', async () => {
    const b = await createActive({ label: 'perms' });
    await upload(b.uuid, 'f.txt', 'content').expect(201);
    const viewer = await tokenWith(stack.ds, ws.uuid, ['buckets:view']);
    const operator = await tokenWith(stack.ds, ws.uuid, ['buckets:operate']);
    expect(
      (await stack.http.post(`/api/v1/buckets/${b.uuid}/objects/download_url`).set(auth(viewer)).send({ key: 'f.txt' }))
        .status,
    ).toBe(200);
    expect(
      (
        await stack.http
          .post(`/api/v1/buckets/${b.uuid}/objects/download_url`)
          .set(auth(operator))
          .send({ key: 'f.txt' })
      ).status,
    ).toBe(403);
    expect((await stack.http.put(`/api/v1/buckets/${b.uuid}`).set(auth(viewer)).send({ disk_size: 2 })).status).toBe(
      403,
    );
    expect((await upload(b.uuid, 'g.txt', 'x', viewer)).status).toBe(403);
    expect((await stack.http.put(`/api/v1/buckets/${b.uuid}`).set(auth(operator)).send({ disk_size: 2 })).status).toBe(
      200,
    );
    expect((await upload(b.uuid, 'g.txt', 'x', operator)).status).toBe(201);
    expect(
      (
        await stack.http
          .post(`/api/v1/buckets/${b.uuid}/objects/rename`)
          .set(auth(operator))
          .send({ key: 'g.txt', new_key: 'h.txt' })
      ).status,
    ).toBe(200);
    expect((await stack.http.delete(`/api/v1/buckets/${b.uuid}/objects?key=h.txt`).set(auth(viewer))).status).toBe(403);
    expect((await stack.http.delete(`/api/v1/buckets/${b.uuid}/objects?key=h.txt`).set(auth(operator))).status).toBe(
      204,
    );
    // A custom role carrying only buckets:operate cannot create buckets.
    const member = await memberWith(stack.ds, ws.uuid, 'bucket-operator', ['buckets:operate']);
    expect(
      (
        await stack.http
          .post('/api/v1/buckets')
          .set(auth(member.token))
          .send({ label: 'no', resource_id: ws.resourceUuid })
      ).status,
    ).toBe(403);
  });

  it('a bucket in a project closed to the caller is hidden (404) and left out of lists', async () => {
    const project = await stack.http.post('/api/v1/projects').set(auth(ws.ownerToken)).send({ name: 'closed-storage' });
    const b = await stack.http
      .post('/api/v1/buckets')
      .set(auth(ws.ownerToken))
      .send({ label: 'closed', resource_id: ws.resourceUuid, project_id: project.body.uuid });
    await stack.http
      .post(`/api/v1/projects/${project.body.uuid}/restrictions`)
      .set(auth(ws.ownerToken))
      .send({ subject_type: 'role', role_name: 'admin' })
      .expect(201);
    const outsider = await memberWith(stack.ds, ws.uuid, 'bucket-reader', ['buckets:view']);
    expect((await stack.http.get(`/api/v1/buckets/${b.body.uuid}`).set(auth(outsider.token))).status).toBe(404);
    const list = await stack.http.get('/api/v1/buckets').set(auth(outsider.token));
    expect(list.body.map((x: { uuid: string }) => x.uuid)).not.toContain(b.body.uuid);
  });

  it('no bucket secret key appears in a log line, nor in a list response', async () => {
    const b = await createActive({ label: 'scan' });
    await stack.http.get('/api/v1/buckets').set(auth(ws.ownerToken)).expect(200);
    const [row] = await stack.ds.query(`SELECT s3_secret_sealed FROM buckets WHERE uuid = $1`, [b.uuid]);
    expect(row.s3_secret_sealed).not.toContain(b.s3_secret_key);
    expectNoSecretLeaks(stack, [b.s3_secret_key], { allowInResponses: [b.s3_secret_key] });
    const lists = stack.responseBodies.filter((body) => body.startsWith('['));
    expect(lists.length).toBeGreaterThan(0);
    for (const body of lists) expect(body).not.toContain(b.s3_secret_key);
  });
});
