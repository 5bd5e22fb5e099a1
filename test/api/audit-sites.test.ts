import { REDACTED } from '../../domain/audit';
import { insertApp } from '../support/app-rows';
import { deliver, pullRequestPayload, pushPayload, sha } from '../support/code-host';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { fixture, localRepo, type LocalRepo } from '../support/git';
import { startObjectStore } from '../support/object-store';
import { eventually, expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';
import { auditEntries } from '../support/audit';

/** The audit log over stacks, static sites, domains and preview environments (API and code-host deliveries). */
let stack: TestStack;
let ws: Workspace;
let ownerMember: string;
let store: Awaited<ReturnType<typeof startObjectStore>>;
const repos: LocalRepo[] = [];
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });

beforeAll(async () => {
  store = await startObjectStore();
  stack = await startStack({
    objectStore: store,
    env: { BERTH_GIT_ALLOW_FILE_URLS: '1', BERTH_SITES_DOMAIN: 'sites.test.localhost' },
  });
  ws = await seedWorkspace(stack.ds);
  [{ uuid: ownerMember }] = await stack.ds.query(
    `SELECT uuid FROM members WHERE workspace_uuid = $1 AND user_uuid = $2`,
    [ws.uuid, ws.ownerUserUuid],
  );
  await stack.startWorker();
});
afterAll(async () => {
  await stack?.close();
  await store?.dispose();
  for (const r of repos) r.dispose();
});

const auditOf = (resourceUuid: string, action?: string) => auditEntries(stack, ws.ownerToken, resourceUuid, action);

/** The one entry of this action on the resource, recorded by the owner through the API. */
async function ownerEntry(resourceUuid: string, action: string, resourceType: string) {
  const entries = await auditOf(resourceUuid, action);
  expect(entries).toHaveLength(1);
  expect(entries[0]).toMatchObject({
    actor: { type: 'member', uuid: ownerMember },
    source: 'api',
    action,
    resource_type: resourceType,
    resource_uuid: resourceUuid,
    request_id: expect.any(String),
  });
  return entries[0]!;
}

/** A delete's diff shows every field going away (from only) and none arriving. */
function expectGone(diff: Record<string, { from?: unknown; to?: unknown }>) {
  for (const change of Object.values(diff)) expect(change).not.toHaveProperty('to');
}

const allDiffs = async () =>
  JSON.stringify(await stack.ds.query(`SELECT diff FROM audit_events WHERE workspace_uuid = $1`, [ws.uuid]));

describe('audit entries of stacks', () => {
  it('create records stack.create with its variables redacted; a label change stack.update; delete stack.delete', async () => {
    const r = localRepo({ 'compose.yaml': fixture('web-postgres-cache.yaml') });
    repos.push(r);
    const password = 'audit-db-password-very-secret-77';
    const created = await stack.http
      .post('/api/v1/stacks')
      .set(auth(ws.ownerToken))
      .send({
        name: 'audited-stack',
        label: 'Audited',
        resource_id: ws.resourceUuid,
        repository_url: r.url,
        branch: 'main',
        variables: { DB_PASSWORD: password, SECRET_KEY_BASE: 'audit-skb-very-secret-78' },
      });
    expect(created.status).toBe(201);
    const uuid: string = created.body.uuid;
    const create = await ownerEntry(uuid, 'stack.create', 'stack');
    expect(create.diff).toMatchObject({
      name: { to: 'audited-stack' },
      label: { to: 'Audited' },
      repository: { to: r.url },
      branch: { to: 'main' },
      variables_sealed: { to: REDACTED },
    });
    expect(create.diff.name).not.toHaveProperty('from');
    const [{ sealed }] = await stack.ds.query(`SELECT variables_sealed AS sealed FROM stacks WHERE uuid = $1`, [uuid]);
    const diffs = await allDiffs();
    for (const s of [password, 'audit-skb-very-secret-78', sealed]) expect(diffs).not.toContain(s);

    await stack.http.put(`/api/v1/stacks/${uuid}`).set(auth(ws.ownerToken)).send({ label: 'Renamed' }).expect(200);
    const update = await ownerEntry(uuid, 'stack.update', 'stack');
    expect(update.diff).toEqual({ label: { from: 'Audited', to: 'Renamed' } });

    await eventually(
      async () => {
        const s = await stack.http.get(`/api/v1/stacks/${uuid}`).set(auth(ws.ownerToken));
        return ['completed', 'failed'].includes(s.body.latest_deployment?.state);
      },
      { what: 'first stack deployment finished', timeoutMs: 60_000 },
    );
    await stack.http.delete(`/api/v1/stacks/${uuid}`).set(auth(ws.ownerToken)).expect(204);
    const del = await ownerEntry(uuid, 'stack.delete', 'stack');
    expect(del.diff).toMatchObject({
      name: { from: 'audited-stack' },
      label: { from: 'Renamed' },
      variables_sealed: { from: REDACTED },
    });
    expectGone(del.diff);
    expectNoSecretLeaks(stack, [password, sealed]);
  });
});

describe('audit entries of static sites', () => {
  it('create records static_site.create; delete static_site.delete', async () => {
    const created = await stack.http
      .post('/api/v1/static_sites')
      .set(auth(ws.ownerToken))
      .send({ name: 'audited-site', label: 'Docs' });
    expect(created.status).toBe(201);
    const uuid: string = created.body.uuid;
    const create = await ownerEntry(uuid, 'static_site.create', 'static_site');
    expect(create.diff).toMatchObject({
      name: { to: 'audited-site' },
      label: { to: 'Docs' },
      state: { to: 'pending' },
    });
    await eventually(
      async () =>
        (await stack.http.get(`/api/v1/static_sites/${uuid}`).set(auth(ws.ownerToken))).body.state === 'assigned',
      { what: 'site assigned' },
    );

    await stack.http.delete(`/api/v1/static_sites/${uuid}`).set(auth(ws.ownerToken)).expect(204);
    const del = await ownerEntry(uuid, 'static_site.delete', 'static_site');
    expect(del.diff).toMatchObject({ name: { from: 'audited-site' }, state: { from: 'assigned' } });
    expectGone(del.diff);
  });
});

describe('audit entries of custom domains', () => {
  it('create records domain.create (its verification token redacted); delete domain.delete; a refused request records nothing', async () => {
    const app = await insertApp(stack.ds, ws);
    const created = await stack.http
      .post(`/api/v1/apps/${app.uuid}/domains`)
      .set(auth(ws.ownerToken))
      .send({ domain: { name: 'audit.example.com' } });
    expect(created.status).toBe(201);
    const uuid: string = created.body.uuid;
    const create = await ownerEntry(uuid, 'domain.create', 'domain');
    expect(create.diff).toMatchObject({
      name: { to: 'audit.example.com' },
      app_uuid: { to: app.uuid },
      verification_status: { to: 'pending' },
      verification_token: { to: REDACTED },
    });
    expect(await allDiffs()).not.toContain(created.body.verification_token);

    const count = async () =>
      (await stack.ds.query(`SELECT count(*)::int AS n FROM audit_events WHERE workspace_uuid = $1`, [ws.uuid]))[0].n;
    const before = await count();
    expect(
      (
        await stack.http
          .post(`/api/v1/apps/${app.uuid}/domains`)
          .set(auth(ws.ownerToken))
          .send({ domain: { name: 'audit.example.com' } })
      ).status,
    ).toBe(409);
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${app.uuid}/domains/${uuid}`)
          .set(auth(ws.ownerToken))
          .send({ domain: { name: 'bad name' } })
      ).status,
    ).toBe(422);
    expect(await count()).toBe(before);

    await stack.http.delete(`/api/v1/apps/${app.uuid}/domains/${uuid}`).set(auth(ws.ownerToken)).expect(204);
    const del = await ownerEntry(uuid, 'domain.delete', 'domain');
    expect(del.diff).toMatchObject({ name: { from: 'audit.example.com' }, verification_token: { from: REDACTED } });
    expectGone(del.diff);
    expect((await stack.http.delete(`/api/v1/apps/${app.uuid}/domains/${uuid}`).set(auth(ws.ownerToken))).status).toBe(
      404,
    );
    expect(await auditOf(uuid, 'domain.delete')).toHaveLength(1);
  });
});

describe('audit entries of preview environments', () => {
  async function enabledApp(config: Record<string, unknown> = {}) {
    const app = await insertApp(stack.ds, ws);
    const res = await stack.http
      .put(`/api/v1/apps/${app.uuid}/preview_environments/config`)
      .set(auth(ws.ownerToken))
      .send({ enabled: true, ...config });
    expect(res.status).toBe(200);
    return { app, secret: res.body.webhook_secret as string };
  }

  const show = (appUuid: string, id: number) =>
    stack.http.get(`/api/v1/apps/${appUuid}/preview_environments/${id}`).set(auth(ws.ownerToken));

  it('the settings update records preview_settings.update on the app; the webhook secret shows as redacted', async () => {
    const { app, secret } = await enabledApp({ lifetime_hours: 24 });
    const first = await ownerEntry(app.uuid, 'preview_settings.update', 'preview_settings');
    expect(first.diff).toMatchObject({
      enabled: { to: true },
      lifetime_hours: { to: 24 },
      webhook_secret_sealed: { to: REDACTED },
    });
    expect(first.diff.enabled).not.toHaveProperty('from');
    const rotated = await stack.http
      .put(`/api/v1/apps/${app.uuid}/preview_environments/config`)
      .set(auth(ws.ownerToken))
      .send({ rotate_webhook_secret: true, lifetime_hours: 48 });
    expect(rotated.status).toBe(200);
    const entries = await auditOf(app.uuid, 'preview_settings.update');
    expect(entries).toHaveLength(2);
    expect(entries[0]!.diff).toEqual({
      lifetime_hours: { from: 24, to: 48 },
      webhook_secret_sealed: { from: REDACTED, to: REDACTED },
    });
    const [{ sealed }] = await stack.ds.query(
      `SELECT webhook_secret_sealed AS sealed FROM preview_configs WHERE app_uuid = $1`,
      [app.uuid],
    );
    const diffs = await allDiffs();
    for (const s of [secret, rotated.body.webhook_secret, sealed]) expect(diffs).not.toContain(s);
  });

  it('code-host deliveries record preview.create, preview.update and preview.destroy as the system; deliveries that change nothing record none', async () => {
    const { app, secret } = await enabledApp();
    const codeHostEntries = async () =>
      (
        await stack.ds.query(
          `SELECT action FROM audit_events WHERE workspace_uuid = $1 AND source = 'code-host' ORDER BY created_at`,
          [ws.uuid],
        )
      ).length;
    const already = await codeHostEntries();
    const head = sha();
    const opened = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'opened', number: 11, headSha: head, branch: 'feature/audit', title: 'Audit me' }),
    ).set('User-Agent', 'GitHub-Hookshot/audit');
    expect(opened.status).toBe(202);
    const id: number = opened.body.preview_environment_id;
    const preview = (await show(app.uuid, id)).body;
    const created = await auditOf(preview.app_uuid, 'preview.create');
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({
      actor: { type: 'system', uuid: null },
      source: 'code-host',
      resource_type: 'preview',
      resource_uuid: preview.app_uuid,
      user_agent: 'GitHub-Hookshot/audit',
      request_id: expect.any(String),
      diff: {
        parent_app_uuid: { to: app.uuid },
        branch: { to: 'feature/audit' },
        head_sha: { to: head },
        status: { to: 'creating' },
        pull_request_number: { to: 11 },
        pull_request_title: { to: 'Audit me' },
      },
    });
    expect(created[0]!.request_id).toBe(opened.headers['x-request-id']);

    await eventually(async () => (await show(app.uuid, id)).body.status === 'active', { what: 'preview active' });
    // Nothing new (same head, same title), an action previews ignore, an event they do not use: no entries.
    await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'edited', number: 11, headSha: head, branch: 'feature/audit', title: 'Audit me' }),
    ).expect(202);
    await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'labeled', number: 11, headSha: sha() }),
    ).expect(202);
    await deliver(stack, app.uuid, secret, 'issues', { action: 'opened' }).expect(202);
    await deliver(stack, app.uuid, secret, 'push', pushPayload('unmatched', sha())).expect(202);
    expect(await codeHostEntries()).toBe(already + 1);

    const next = sha();
    const pushed = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({
        action: 'synchronize',
        number: 11,
        headSha: next,
        branch: 'feature/audit',
        title: 'Audit me',
      }),
    );
    expect(pushed.body).toEqual({ result: 'updated', preview_environment_id: id });
    const updated = await auditOf(preview.app_uuid, 'preview.update');
    expect(updated).toHaveLength(1);
    expect(updated[0]).toMatchObject({
      actor: { type: 'system', uuid: null },
      source: 'code-host',
      resource_type: 'preview',
      resource_uuid: preview.app_uuid,
      diff: {
        head_sha: { from: head, to: next },
        status: { from: 'active', to: 'updating' },
        generation: { from: 1, to: 2 },
      },
    });
    expect(updated[0]!.diff).not.toHaveProperty('branch');

    const closed = await deliver(
      stack,
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'closed', number: 11, headSha: next, merged: true }),
    );
    expect(closed.body).toEqual({ result: 'destroying', preview_environment_id: id });
    const destroyed = await auditOf(preview.app_uuid, 'preview.destroy');
    expect(destroyed).toHaveLength(1);
    expect(destroyed[0]).toMatchObject({
      actor: { type: 'system', uuid: null },
      source: 'code-host',
      resource_uuid: preview.app_uuid,
      diff: {
        status: { to: 'destroying' },
        pull_request_state: { from: 'open', to: 'closed' },
        pull_request_merged: { from: false, to: true },
      },
    });
    expect(await codeHostEntries()).toBe(already + 3);
    // A close for an environment that no longer exists changes nothing.
    await eventually(async () => (await show(app.uuid, id)).status === 404, { what: 'preview gone' });
    expect(
      (
        await deliver(
          stack,
          app.uuid,
          secret,
          'pull_request',
          pullRequestPayload({ action: 'closed', number: 11, headSha: next }),
        )
      ).body.result,
    ).toBe('ignored');
    expect(await codeHostEntries()).toBe(already + 3);
  });

  it('deleting an environment through the API records preview.delete by the member on the preview app', async () => {
    const { app, secret } = await enabledApp({ triggers: { pull_requests: false, branch_patterns: ['audit/*'] } });
    const created = await deliver(stack, app.uuid, secret, 'push', pushPayload('audit/branch', sha()));
    expect(created.body.result).toBe('created');
    const id: number = created.body.preview_environment_id;
    const preview = (await show(app.uuid, id)).body;
    const createEntry = await auditOf(preview.app_uuid, 'preview.create');
    expect(createEntry).toHaveLength(1);
    expect(createEntry[0]!.diff).toMatchObject({ branch: { to: 'audit/branch' }, pull_request_number: { to: null } });
    await eventually(async () => (await show(app.uuid, id)).body.status === 'active', { what: 'preview active' });

    await stack.http.delete(`/api/v1/apps/${app.uuid}/preview_environments/${id}`).set(auth(ws.ownerToken)).expect(202);
    const del = await ownerEntry(preview.app_uuid, 'preview.delete', 'preview');
    expect(del.diff).toEqual({ status: { from: 'active', to: 'destroying' } });
  });
});
