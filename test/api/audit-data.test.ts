import { createActivities } from '../../activities';
import { REDACTED } from '../../domain/audit';
import { insertApp } from '../support/data';
import { memberWith, seedWorkspace, type Workspace } from '../support/fixtures';
import { startObjectStore } from '../support/object-store';
import { eventually, expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';
import { auditEntries } from '../support/audit';

/** The audit log over add-ons, services and buckets: one entry per accepted change, secrets redacted. */
let stack: TestStack;
let ws: Workspace;
let store: Awaited<ReturnType<typeof startObjectStore>>;
let appUuid: string;
let ownerMember: string;
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });
const owner = () => auth(ws.ownerToken);

beforeAll(async () => {
  store = await startObjectStore();
  stack = await startStack({ objectStore: store });
  ws = await seedWorkspace(stack.ds);
  appUuid = await insertApp(stack.ds, ws);
  [{ m: ownerMember }] = await stack.ds.query(
    `SELECT created_by_member_uuid AS m FROM compute_resources WHERE uuid = $1`,
    [ws.resourceUuid],
  );
  await stack.startWorker();
});
afterAll(async () => {
  await stack?.close();
  await store?.dispose();
});

const auditOf = (resourceUuid: string, action?: string) => auditEntries(stack, ws.ownerToken, resourceUuid, action);

/** Every stored diff of the resource as text, to prove a secret is in none of them. */
async function storedDiffs(resourceUuid: string): Promise<string> {
  return JSON.stringify(await stack.ds.query(`SELECT diff FROM audit_events WHERE resource_uuid = $1`, [resourceUuid]));
}

describe('audit entries of add-ons and services', () => {
  it('an add-on create and delete each record one entry; the generated password shows only as redacted', async () => {
    const admin = await memberWith(stack.ds, ws.uuid, 'admin');
    const created = await stack.http
      .post(`/api/v1/apps/${appUuid}/addons`)
      .set(auth(admin.token))
      .send({ type: 'valkey', label: 'sessions' });
    expect(created.status).toBe(201);
    const [entry] = await auditOf(created.body.uuid, 'addon.create');
    expect(await auditOf(created.body.uuid)).toHaveLength(1);
    expect(entry).toMatchObject({
      actor: { type: 'member', uuid: admin.memberUuid },
      source: 'api',
      resource_type: 'addon',
      resource_uuid: created.body.uuid,
      diff: {
        type: { to: 'valkey' },
        label: { to: 'sessions' },
        state: { to: 'pending' },
        app_uuid: { to: appUuid },
        password_sealed: { to: REDACTED },
      },
    });
    expect(entry!.diff.password_sealed).toEqual({ to: REDACTED });
    const [{ sealed }] = await stack.ds.query(`SELECT password_sealed AS sealed FROM addons WHERE uuid = $1`, [
      created.body.uuid,
    ]);
    const password: string = created.body.connection_details.internal.password;
    expect(password.length).toBeGreaterThan(10);

    const del = await stack.http.delete(`/api/v1/apps/${appUuid}/addons/${created.body.uuid}`).set(owner());
    expect(del.status).toBe(202);
    const deletes = await auditOf(created.body.uuid, 'addon.delete');
    expect(deletes).toHaveLength(1);
    expect(deletes[0]).toMatchObject({
      actor: { type: 'member', uuid: ownerMember },
      resource_type: 'addon',
      diff: { state: { to: 'deleting' } },
    });
    expect(deletes[0]!.diff).not.toHaveProperty('password_sealed');
    const text = await storedDiffs(created.body.uuid);
    for (const s of [password, sealed]) expect(text).not.toContain(s);
    expectNoSecretLeaks(stack, [sealed]);
  });

  it('a service create, stop and delete each record one entry; a refused stop records none', async () => {
    const created = await stack.http
      .post('/api/v1/services')
      .set(owner())
      .send({ type: 'postgres', label: 'ledger', resource_id: ws.resourceUuid });
    expect(created.status).toBe(201);
    const uuid: string = created.body.uuid;
    const [made] = await auditOf(uuid, 'service.create');
    expect(made).toMatchObject({
      resource_type: 'service',
      diff: { kind: { to: 'service' }, label: { to: 'ledger' }, password_sealed: { to: REDACTED } },
    });
    const state = await eventually(
      async () => {
        const r = await stack.http.get(`/api/v1/services/${uuid}`).set(owner());
        return /^(healthy|bound)$/.test(r.body.state) ? (r.body.state as string) : null;
      },
      { what: 'service live' },
    );

    const stop = await stack.http.patch(`/api/v1/services/${uuid}/state`).set(owner()).send({ action: 'stop' });
    expect(stop.status).toBe(200);
    expect(stop.body.state).toBe('stopped');
    const stops = await auditOf(uuid, 'service.change_state');
    expect(stops).toHaveLength(1);
    expect(stops[0]).toMatchObject({
      resource_type: 'service',
      resource_uuid: uuid,
      diff: { state: { from: state, to: 'stopped' } },
    });

    const count = async () => (await auditOf(uuid)).length;
    const before = await count();
    expect(
      (await stack.http.patch(`/api/v1/services/${uuid}/state`).set(owner()).send({ action: 'stop' })).status,
    ).toBe(409);
    expect((await stack.http.post(`/api/v1/services/${uuid}/reset_database`).set(owner())).status).toBe(409);
    expect(await count()).toBe(before);

    expect((await stack.http.delete(`/api/v1/services/${uuid}`).set(owner())).status).toBe(202);
    const deletes = await auditOf(uuid, 'service.delete');
    expect(deletes).toHaveLength(1);
    expect(deletes[0]!.diff).toMatchObject({ state: { from: 'stopped', to: 'deleting' } });
  });

  it('a restore records one entry naming the backup it restores; a refused restore records none', async () => {
    const created = await stack.http
      .post('/api/v1/services')
      .set(owner())
      .send({ type: 'postgres', label: 'restored', resource_id: ws.resourceUuid, backup_enabled: true });
    expect(created.status).toBe(201);
    const uuid: string = created.body.uuid;
    await eventually(
      async () => {
        const r = await stack.http.get(`/api/v1/services/${uuid}`).set(owner());
        const b = await stack.http.get(`/api/v1/services/${uuid}/backups`).set(owner());
        return r.body.state === 'healthy' && b.body.backup_active === true;
      },
      { what: 'service live with backups' },
    );
    const backup = await createActivities(stack.activityDeps).takeAddonBackup(uuid);
    expect(
      (await stack.http.post(`/api/v1/services/${uuid}/restore_backup`).set(owner()).send({ backup_name: 'nope' }))
        .status,
    ).toBe(422);
    expect(await auditOf(uuid, 'service.restore')).toHaveLength(0);

    const res = await stack.http
      .post(`/api/v1/services/${uuid}/restore_backup`)
      .set(owner())
      .send({ backup_name: backup });
    expect(res.status).toBe(202);
    await stack.temporal.workflow.getHandle(`service-restore/${uuid}`).result();
    const entries = await auditOf(uuid, 'service.restore');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      actor: { type: 'member', uuid: ownerMember },
      resource_type: 'service',
      resource_uuid: uuid,
      diff: { restore_from: { to: { backup_name: backup } }, to_new_cluster: { to: false } },
    });
  });
});

describe('audit entries of buckets and their objects', () => {
  it('a bucket create records one entry whose secret key shows only as redacted; the key pair itself appears in no entry', async () => {
    const res = await stack.http
      .post('/api/v1/buckets')
      .set(owner())
      .send({ label: 'Audited', resource_id: ws.resourceUuid, disk_size: 2 });
    expect(res.status).toBe(201);
    const entries = await auditOf(res.body.uuid);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      action: 'bucket.create',
      actor: { type: 'member', uuid: ownerMember },
      resource_type: 'bucket',
      resource_uuid: res.body.uuid,
      diff: {
        label: { to: 'Audited' },
        disk_size_gib: { to: 2 },
        s3_access_key: { to: res.body.s3_access_key },
        s3_secret_sealed: { to: REDACTED },
      },
    });
    const [{ sealed }] = await stack.ds.query(`SELECT s3_secret_sealed AS sealed FROM buckets WHERE uuid = $1`, [
      res.body.uuid,
    ]);
    const text = await storedDiffs(res.body.uuid);
    for (const s of [res.body.s3_secret_key as string, sealed as string]) expect(text).not.toContain(s);
    expectNoSecretLeaks(stack, [sealed], { allowInResponses: [res.body.s3_secret_key] });
  });

  it('an update, object upload, rename and delete, and the bucket delete each record one entry; a download link records none', async () => {
    const res = await stack.http
      .post('/api/v1/buckets')
      .set(owner())
      .send({ label: 'Objects', resource_id: ws.resourceUuid });
    expect(res.status).toBe(201);
    const uuid: string = res.body.uuid;
    await eventually(
      async () => (await stack.http.get(`/api/v1/buckets/${uuid}`).set(owner())).body.state === 'active',
      { what: 'bucket active' },
    );

    await stack.http.put(`/api/v1/buckets/${uuid}`).set(owner()).send({ label: 'Objects renamed' }).expect(200);
    const updates = await auditOf(uuid, 'bucket.update');
    expect(updates).toHaveLength(1);
    expect(updates[0]!.diff).toEqual({ label: { from: 'Objects', to: 'Objects renamed' } });

    await stack.http
      .post(`/api/v1/buckets/${uuid}/objects`)
      .set(owner())
      .send({ key: 'docs/a.txt', content_base64: Buffer.from('hello').toString('base64'), content_type: 'text/plain' })
      .expect(201);
    const uploads = await auditOf(uuid, 'bucket.object_upload');
    expect(uploads).toHaveLength(1);
    expect(uploads[0]).toMatchObject({
      resource_type: 'bucket',
      resource_uuid: uuid,
      diff: { key: { to: 'docs/a.txt' }, size: { to: 5 }, content_type: { to: 'text/plain' }, replaced: { to: false } },
    });

    await stack.http
      .post(`/api/v1/buckets/${uuid}/objects/rename`)
      .set(owner())
      .send({ key: 'docs/a.txt', new_key: 'docs/b.txt' })
      .expect(200);
    expect((await auditOf(uuid, 'bucket.object_rename'))[0]!.diff).toEqual({
      key: { from: 'docs/a.txt', to: 'docs/b.txt' },
    });

    const count = async () => (await auditOf(uuid)).length;
    const before = await count();
    await stack.http
      .post(`/api/v1/buckets/${uuid}/objects/download_url`)
      .set(owner())
      .send({ key: 'docs/b.txt' })
      .expect(200);
    expect((await stack.http.delete(`/api/v1/buckets/${uuid}/objects?key=docs/missing.txt`).set(owner())).status).toBe(
      404,
    );
    expect(
      (
        await stack.http
          .post(`/api/v1/buckets/${uuid}/objects/rename`)
          .set(owner())
          .send({ key: 'docs/b.txt', new_key: 'docs/b.txt' })
      ).status,
    ).toBe(422);
    expect(await count()).toBe(before);

    await stack.http.delete(`/api/v1/buckets/${uuid}/objects?key=docs/b.txt`).set(owner()).expect(204);
    expect((await auditOf(uuid, 'bucket.object_delete'))[0]!.diff).toEqual({
      key: { from: 'docs/b.txt' },
      size: { from: 5 },
    });

    await stack.http.delete(`/api/v1/buckets/${uuid}`).set(owner()).expect(204);
    const deletes = await auditOf(uuid, 'bucket.delete');
    expect(deletes).toHaveLength(1);
    expect(deletes[0]!.diff).toMatchObject({
      uuid: { from: uuid },
      label: { from: 'Objects renamed' },
      s3_secret_sealed: { from: REDACTED },
    });
    expect(deletes[0]!.diff.label).not.toHaveProperty('to');
    expect(
      (await auditOf(uuid))
        .filter((e) => e.source === 'api')
        .map((e) => e.action)
        .sort(),
    ).toEqual([
      'bucket.create',
      'bucket.delete',
      'bucket.object_delete',
      'bucket.object_rename',
      'bucket.object_upload',
      'bucket.update',
    ]);
  });
});
