import { REDACTED } from '../../domain/audit';
import { auth, BIG_PLAN, createApp, selfSigned } from '../support/apps';
import { insertApp } from '../support/app-rows';
import { memberWith, seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';
import { auditEntries } from '../support/audit';

/** The audit log of the apps area: apps, deployments, ports, TLS certificates and cron jobs. */
let stack: TestStack;
let ws: Workspace;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
});
afterAll(() => stack.close());

const owner = () => auth(ws.ownerToken);

const auditOf = (resourceUuid: string, action?: string) => auditEntries(stack, ws.ownerToken, resourceUuid, action);

/** The one entry of the action on the resource. */
async function onlyEntry(resourceUuid: string, action: string): Promise<Record<string, any>> {
  const entries = await auditOf(resourceUuid, action);
  expect(entries).toHaveLength(1);
  return entries[0]!;
}

describe('audit entries of apps', () => {
  it('an app create records app.create with the new row; its basic-auth password shows only as redacted', async () => {
    const password = 'create-Pa55word-audit';
    const admin = await memberWith(stack.ds, ws.uuid, 'admin');
    const app = await createApp(stack, admin.token, {
      name: 'audited-create',
      label: 'Shop',
      resource_id: ws.resourceUuid,
      basic_auth_enabled: true,
      basic_auth_username: 'shop-admin',
      basic_auth_password: password,
    });
    const entry = await onlyEntry(app.uuid, 'app.create');
    expect(entry).toMatchObject({
      actor: { type: 'member', uuid: admin.memberUuid },
      source: 'api',
      resource_type: 'app',
      resource_uuid: app.uuid,
      diff: {
        uuid: { to: app.uuid },
        label: { to: 'Shop' },
        state: { to: 'pending' },
        basic_auth_username: { to: 'shop-admin' },
        basic_auth_password_sealed: { to: REDACTED },
      },
    });
    expect(entry.diff.label).not.toHaveProperty('from');
    expect(entry.request_id).toEqual(expect.any(String));
    const [{ sealed }] = await stack.ds.query(`SELECT basic_auth_password_sealed AS sealed FROM apps WHERE uuid = $1`, [
      app.uuid,
    ]);
    const diffs = JSON.stringify(
      await stack.ds.query(`SELECT diff FROM audit_events WHERE resource_uuid = $1`, [app.uuid]),
    );
    expect(diffs).not.toContain(password);
    expect(diffs).not.toContain(sealed);
    expectNoSecretLeaks(stack, [password, sealed]);
  });

  it('an app delete records app.delete with the move to deleting; a refused delete records none', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'audited-delete', resource_id: ws.resourceUuid });
    await stack.http.delete(`/api/v1/apps/${app.uuid}`).set(owner()).expect(202);
    const entry = await onlyEntry(app.uuid, 'app.delete');
    expect(entry).toMatchObject({
      actor: { type: 'member', uuid: expect.any(String) },
      resource_type: 'app',
      resource_uuid: app.uuid,
    });
    expect(entry.diff).toEqual({ state: { from: 'pending', to: 'deleting' } });

    const cloning = await insertApp(stack.ds, ws, { state: 'cloning' });
    expect((await stack.http.delete(`/api/v1/apps/${cloning.uuid}`).set(owner())).status).toBe(409);
    expect(await auditOf(cloning.uuid)).toEqual([]);
  });

  it('health checks, scaling, deployment settings and state changes each record their own action with the field diff', async () => {
    const app = await insertApp(stack.ds, ws, { state: 'running' });
    await stack.http
      .put(`/api/v1/apps/${app.uuid}/health_checks`)
      .set(owner())
      .send({ health_checks: [{ kind: 'liveness', protocol: 'http', path: '/up' }] })
      .expect(200);
    const checks = await onlyEntry(app.uuid, 'app.update_health_checks');
    expect(Object.keys(checks.diff)).toEqual(['health_checks']);
    expect(checks.diff.health_checks.to).toEqual([expect.objectContaining({ kind: 'liveness', path: '/up' })]);

    await stack.http
      .put(`/api/v1/apps/${app.uuid}/scaling_profile`)
      .set(owner())
      .send({ min_replicas: 1, max_replicas: 3, target_cpu_percent: 70 })
      .expect(200);
    const scaling = await onlyEntry(app.uuid, 'app.update_scaling');
    expect(scaling.diff.scaling_profile.to).toEqual({ min_replicas: 1, max_replicas: 3, target_cpu_percent: 70 });

    await stack.http
      .put(`/api/v1/apps/${app.uuid}/deployment`)
      .set(owner())
      .send({ builder: 'dockerfile' })
      .expect(200);
    expect((await onlyEntry(app.uuid, 'app.update_deployment')).diff).toEqual({
      builder: { from: 'auto', to: 'dockerfile' },
    });

    await stack.http.patch(`/api/v1/apps/${app.uuid}/state`).set(owner()).send({ action: 'stop' }).expect(202);
    const state = await onlyEntry(app.uuid, 'app.state_change');
    expect(state.diff).toEqual({ state: { from: 'running', to: expect.any(String) } });
    expect(state.diff.state.to).not.toBe('running');
  });

  it('a clone records app.clone on the new app, naming its source', async () => {
    const source = await insertApp(stack.ds, ws, { label: 'origin', state: 'running' });
    const res = await stack.http
      .post(`/api/v1/apps/${source.uuid}/clone`)
      .set(owner())
      .send({ label: 'Copy' })
      .expect(201);
    const entry = await onlyEntry(res.body.uuid, 'app.clone');
    expect(entry).toMatchObject({
      resource_type: 'app',
      resource_uuid: res.body.uuid,
      diff: { cloned_from: { to: source.uuid }, label: { to: 'Copy' }, state: { to: 'cloning' } },
    });
    expect(await auditOf(source.uuid)).toEqual([]);
  });
});

describe('audit entries of deployments, ports, TLS certificates and cron jobs', () => {
  it('a deployment records deployment.create; its cancel records deployment.cancel with the state move', async () => {
    const app = await insertApp(stack.ds, ws, { state: 'running' });
    const token = await tokenWith(stack.ds, ws.uuid, ['apps:deploy']);
    const made = await stack.http
      .post(`/api/v1/apps/${app.uuid}/deployments`)
      .set(auth(token))
      .send({ branch: 'release' })
      .expect(202);
    const created = await onlyEntry(made.body.uuid, 'deployment.create');
    expect(created).toMatchObject({
      actor: { type: 'workspace_token' },
      resource_type: 'deployment',
      diff: { app_uuid: { to: app.uuid }, state: { to: 'pending' }, branch: { to: 'release' } },
    });
    expect(created.actor.uuid).toEqual(expect.any(String));
    expect(JSON.stringify(created)).not.toContain(token);
    await stack.http.post(`/api/v1/apps/${app.uuid}/deployments/${made.body.uuid}/cancel`).set(auth(token)).expect(202);
    expect((await onlyEntry(made.body.uuid, 'deployment.cancel')).diff).toEqual({
      state: { from: 'pending', to: 'cancelling' },
    });
  });

  it('port changes are entries of the app with the port in the diff, from create to delete', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'audited-ports', resource_id: ws.resourceUuid });
    const port = (
      await stack.http
        .post(`/api/v1/apps/${app.uuid}/ports`)
        .set(owner())
        .send({ port: 7000, protocol: 'udp' })
        .expect(201)
    ).body;
    const made = { id: port.id, internal_port: 7000, protocol: 'udp', public: false, external_port: null };
    expect(await onlyEntry(app.uuid, 'port.create')).toMatchObject({
      resource_type: 'app',
      resource_uuid: app.uuid,
      diff: { port: { to: made } },
    });
    expect((await onlyEntry(app.uuid, 'port.create')).diff.port).not.toHaveProperty('from');

    const exposed = (
      await stack.http.patch(`/api/v1/apps/${app.uuid}/ports/${port.id}/expose_publicly`).set(owner()).expect(200)
    ).body;
    const open = { ...made, public: true, external_port: exposed.external_port };
    expect((await onlyEntry(app.uuid, 'port.expose')).diff).toEqual({ port: { from: made, to: open } });

    await stack.http.patch(`/api/v1/apps/${app.uuid}/ports/${port.id}/make_private`).set(owner()).expect(200);
    expect((await onlyEntry(app.uuid, 'port.make_private')).diff).toEqual({ port: { from: open, to: made } });

    await stack.http.delete(`/api/v1/apps/${app.uuid}/ports/${port.id}`).set(owner()).expect(204);
    expect((await onlyEntry(app.uuid, 'port.delete')).diff).toEqual({ port: { from: made } });
    expect((await stack.http.delete(`/api/v1/apps/${app.uuid}/ports/${port.id}`).set(owner())).status).toBe(404);
    expect(await auditOf(app.uuid, 'port.delete')).toHaveLength(1);
  });

  it('a TLS certificate create and delete are recorded; the private key and its sealed form never appear', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'audited-tls', resource_id: ws.resourceUuid });
    const { certificate, privateKey } = selfSigned('audit.example.test');
    const other = selfSigned('other-audit.example.test');
    expect(
      (
        await stack.http
          .post(`/api/v1/apps/${app.uuid}/tls_certificates`)
          .set(owner())
          .send({ certificate, private_key: other.privateKey })
      ).status,
    ).toBe(422);
    const cert = (
      await stack.http
        .post(`/api/v1/apps/${app.uuid}/tls_certificates`)
        .set(owner())
        .send({ certificate, private_key: privateKey })
        .expect(201)
    ).body;
    const [{ sealed }] = await stack.ds.query(
      `SELECT private_key_sealed AS sealed FROM app_tls_certificates WHERE uuid = $1`,
      [cert.uuid],
    );

    const created = await onlyEntry(cert.uuid, 'tls_certificate.create');
    expect(created).toMatchObject({
      resource_type: 'tls_certificate',
      resource_uuid: cert.uuid,
      diff: {
        app_uuid: { to: app.uuid },
        fingerprint_sha256: { to: cert.fingerprint_sha256 },
        private_key_sealed: { to: REDACTED },
      },
    });
    await stack.http.delete(`/api/v1/apps/${app.uuid}/tls_certificates/${cert.uuid}`).set(owner()).expect(204);
    const deleted = await onlyEntry(cert.uuid, 'tls_certificate.delete');
    expect(deleted.diff).toMatchObject({
      uuid: { from: cert.uuid },
      names: { from: cert.names },
      private_key_sealed: { from: REDACTED },
    });
    expect(deleted.diff.uuid).not.toHaveProperty('to');

    const keyBody = privateKey
      .split('\n')
      .filter((l) => l && !l.startsWith('-----'))
      .join('');
    const diffs = JSON.stringify(
      await stack.ds.query(`SELECT diff FROM audit_events WHERE workspace_uuid = $1`, [ws.uuid]),
    );
    for (const s of [privateKey, keyBody.slice(0, 64), sealed, other.privateKey]) expect(diffs).not.toContain(s);
    expectNoSecretLeaks(stack, [privateKey, sealed]);
  });

  it('cron job create, update and delete record cronjob.* entries on the job', async () => {
    const app = await insertApp(stack.ds, ws, { state: 'running' });
    const job = (
      await stack.http
        .post(`/api/v1/apps/${app.uuid}/cronjobs`)
        .set(owner())
        .send({ label: 'nightly', command: 'bin/nightly' })
        .expect(201)
    ).body;
    expect(await onlyEntry(job.uuid, 'cronjob.create')).toMatchObject({
      resource_type: 'cronjob',
      resource_uuid: job.uuid,
      diff: {
        app_uuid: { to: app.uuid },
        label: { to: 'nightly' },
        settings: { to: { schedule_type: 'interval', interval: 60, command: 'bin/nightly' } },
      },
    });
    await stack.http
      .put(`/api/v1/apps/${app.uuid}/cronjobs/${job.uuid}`)
      .set(owner())
      .send({ label: 'hourly', interval: 5 })
      .expect(200);
    const updated = await onlyEntry(job.uuid, 'cronjob.update');
    expect(updated.diff).toMatchObject({
      label: { from: 'nightly', to: 'hourly' },
      settings: { from: { interval: 60 }, to: { interval: 5 } },
      settings_generation: { from: 0, to: 1 },
    });
    await stack.http.delete(`/api/v1/apps/${app.uuid}/cronjobs/${job.uuid}`).set(owner()).expect(202);
    expect((await onlyEntry(job.uuid, 'cronjob.delete')).diff).toMatchObject({
      state: { from: 'pending', to: 'deleting' },
    });
    expect((await stack.http.delete(`/api/v1/apps/${app.uuid}/cronjobs/${job.uuid}`).set(owner())).status).toBe(404);
    expect(await auditOf(job.uuid, 'cronjob.delete')).toHaveLength(1);
  });

  it("the app's activity shows the changes of what it owns (cron jobs, variables), deleted ones included, and nothing of another app", async () => {
    const app = await insertApp(stack.ds, ws, { state: 'running' });
    const other = await insertApp(stack.ds, ws, { state: 'running' });
    const job = (
      await stack.http
        .post(`/api/v1/apps/${app.uuid}/cronjobs`)
        .set(owner())
        .send({ label: 'feed', command: 'bin/feed' })
        .expect(201)
    ).body;
    await stack.http
      .put(`/api/v1/apps/${app.uuid}/variables`)
      .set(owner())
      .send({ variables: [{ key: 'FEED', value: 'one' }] })
      .expect(200);
    await stack.http.delete(`/api/v1/apps/${app.uuid}/cronjobs/${job.uuid}`).set(owner()).expect(202);
    await stack.ds.query(`DELETE FROM addons WHERE uuid = $1`, [job.uuid]);
    await stack.http
      .put(`/api/v1/apps/${other.uuid}/variables`)
      .set(owner())
      .send({ variables: [{ key: 'OTHER', value: 'two' }] })
      .expect(200);
    const res = await stack.http
      .get(`/api/v1/apps/${app.uuid}/activity`)
      .set(auth(await tokenWith(stack.ds, ws.uuid, ['apps:view'])))
      .expect(200);
    const changes = (res.body as Array<Record<string, any>>).filter((e) => e.kind === 'change');
    expect(changes.map((e) => `${e.type} ${e.resource_type} ${e.resource_uuid}`)).toEqual([
      `cronjob.delete cronjob ${job.uuid}`,
      `app.variables_set app ${app.uuid}`,
      `cronjob.create cronjob ${job.uuid}`,
    ]);
  });
});
