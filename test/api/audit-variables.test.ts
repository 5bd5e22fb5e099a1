import { createHash } from 'node:crypto';
import { REDACTED } from '../../domain/audit';
import { hashToken } from '../../domain/tokens';
import { auth, BIG_PLAN, createApp } from '../support/apps';
import { createResource, memberWith, seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';
import { auditEntries } from '../support/audit';

/** Audit entries of the variables and secret files routes (apps and projects): keys and file names, never a value or a content. */
let stack: TestStack;
let ws: Workspace;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
});
afterAll(() => stack?.close());

const auditOf = (resourceUuid: string, action?: string) => auditEntries(stack, ws.ownerToken, resourceUuid, action);

const digest = (s: string) => createHash('sha256').update(s).digest('hex');
const sealedOf = async (sql: string, params: unknown[]) =>
  ((await stack.ds.query(sql, params)) as Array<{ s: string }>).map((r) => r.s);

describe('app variables and secret files: audit entries', () => {
  it('each of the four app routes records one entry on the app naming keys and files only; values, contents and sealed forms never appear', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'audit-vars', resource_id: ws.resourceUuid });
    const operator = await memberWith(stack.ds, ws.uuid, 'developer', ['apps:operate']);
    const plain = 'plain-app-value-4711';
    const hidden = 'hidden-app-value-8123';
    const content = 'app-file-content-secret-6502';
    const set = await stack.http
      .put(`/api/v1/apps/${app.uuid}/variables`)
      .set(auth(operator.token))
      .send({
        variables: [
          { key: 'PORT_NAME', value: plain },
          { key: 'API_KEY', value: hidden, secret: true },
        ],
      });
    expect(set.status).toBe(200);
    const sealedFirst = await sealedOf(`SELECT value_sealed AS s FROM app_variables WHERE app_uuid = $1`, [app.uuid]);
    const [created] = await auditOf(app.uuid, 'app.variables_set');
    expect(created).toMatchObject({
      actor: { type: 'member', uuid: operator.memberUuid },
      source: 'api',
      resource_type: 'app',
      resource_uuid: app.uuid,
    });
    expect(created!.diff).toEqual({
      'variables.API_KEY': { to: 'secret' },
      'variables.API_KEY.value_sealed': { to: REDACTED },
      'variables.PORT_NAME': { to: 'plain' },
      'variables.PORT_NAME.value_sealed': { to: REDACTED },
    });

    // a changed value shows as redacted from/to; an unchanged one (same value again) shows nothing
    await stack.http
      .put(`/api/v1/apps/${app.uuid}/variables`)
      .set(auth(operator.token))
      .send({
        variables: [
          { key: 'PORT_NAME', value: `${plain}-2` },
          { key: 'API_KEY', value: hidden },
        ],
      })
      .expect(200);
    const sets = await auditOf(app.uuid, 'app.variables_set');
    expect(sets).toHaveLength(2);
    expect(sets[0]!.diff).toEqual({ 'variables.PORT_NAME.value_sealed': { from: REDACTED, to: REDACTED } });

    await stack.http.delete(`/api/v1/apps/${app.uuid}/variables/API_KEY`).set(auth(operator.token)).expect(204);
    const [removed] = await auditOf(app.uuid, 'app.variable_delete');
    expect(removed).toMatchObject({
      actor: { uuid: operator.memberUuid },
      resource_type: 'app',
      resource_uuid: app.uuid,
    });
    expect(removed!.diff).toEqual({
      'variables.API_KEY': { from: 'secret' },
      'variables.API_KEY.value_sealed': { from: REDACTED },
    });

    const files = await stack.http
      .put(`/api/v1/apps/${app.uuid}/secret_files`)
      .set(auth(operator.token))
      .send({ files: [{ name: 'key.txt', content }] });
    expect(files.status).toBe(200);
    const file = { uuid: files.body[0].uuid, size_bytes: Buffer.byteLength(content), sha256: digest(content) };
    const sealedFile = await sealedOf(`SELECT content_sealed AS s FROM app_secret_files WHERE app_uuid = $1`, [
      app.uuid,
    ]);
    const [stored] = await auditOf(app.uuid, 'app.secret_files_set');
    expect(stored).toMatchObject({ resource_type: 'app', resource_uuid: app.uuid });
    expect(stored!.diff).toEqual({ 'files.key.txt': { to: file }, 'files.key.txt.content_sealed': { to: REDACTED } });

    const replaced = `${content}-v2`;
    await stack.http
      .put(`/api/v1/apps/${app.uuid}/secret_files`)
      .set(auth(operator.token))
      .send({ files: [{ name: 'key.txt', content: replaced }] })
      .expect(200);
    const [again] = await auditOf(app.uuid, 'app.secret_files_set');
    expect(again!.diff).toEqual({
      'files.key.txt': {
        from: file,
        to: { uuid: file.uuid, size_bytes: Buffer.byteLength(replaced), sha256: digest(replaced) },
      },
      'files.key.txt.content_sealed': { from: REDACTED, to: REDACTED },
    });

    await stack.http.delete(`/api/v1/apps/${app.uuid}/secret_files/${file.uuid}`).set(auth(operator.token)).expect(204);
    const [fileGone] = await auditOf(app.uuid, 'app.secret_file_delete');
    expect(fileGone).toMatchObject({ resource_type: 'app', resource_uuid: app.uuid });
    expect(fileGone!.diff).toEqual({
      'files.key.txt': { from: { uuid: file.uuid, size_bytes: Buffer.byteLength(replaced), sha256: digest(replaced) } },
      'files.key.txt.content_sealed': { from: REDACTED },
    });

    // the activity feed shows the same entries
    const activity = await stack.http.get(`/api/v1/apps/${app.uuid}/activity`).set(auth(ws.ownerToken));
    expect(activity.status).toBe(200);
    expect(activity.text).toContain('app.secret_file_delete');
    expect(
      (await auditOf(app.uuid))
        .map((e) => e.action)
        .filter((a) => /variable|secret_file/.test(a))
        .sort(),
    ).toEqual([
      'app.secret_file_delete',
      'app.secret_files_set',
      'app.secret_files_set',
      'app.variable_delete',
      'app.variables_set',
      'app.variables_set',
    ]);
    const text = JSON.stringify(
      await stack.ds.query(`SELECT diff FROM audit_events WHERE resource_uuid = $1`, [app.uuid]),
    );
    const listed = await stack.http
      .get(`/api/v1/audit_events?resource_uuid=${app.uuid}`)
      .set(auth(ws.ownerToken))
      .expect(200);
    for (const s of [plain, hidden, content, replaced, ...sealedFirst, ...sealedFile]) {
      for (const seen of [text, listed.text, activity.text]) expect(seen).not.toContain(s);
    }
    // the plain values are listed to the operator; the secret one and the file contents never leave, nor reach a log
    expectNoSecretLeaks(stack, [plain, `${plain}-2`, hidden, content, replaced, ...sealedFirst, ...sealedFile], {
      allowInResponses: [plain, `${plain}-2`],
    });
  });

  it('a refused or missing change records nothing', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'audit-none', resource_id: ws.resourceUuid });
    const count = async () =>
      (await stack.ds.query(`SELECT count(*)::int AS n FROM audit_events WHERE resource_uuid = $1`, [app.uuid]))[0].n;
    const before = await count();
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${app.uuid}/variables`)
          .set(auth(ws.ownerToken))
          .send({
            variables: [
              { key: 'A', value: '1' },
              { key: 'A', value: '2' },
            ],
          })
      ).status,
    ).toBe(422);
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${app.uuid}/variables`)
          .set(auth(ws.ownerToken))
          .send({ variables: [{ key: 'A', value: '1', secret: 'yes' }] })
      ).status,
    ).toBe(400);
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${app.uuid}/secret_files`)
          .set(auth(ws.ownerToken))
          .send({
            files: [
              { name: 'a', content: '1' },
              { name: 'a', content: '2' },
            ],
          })
      ).status,
    ).toBe(422);
    expect((await stack.http.delete(`/api/v1/apps/${app.uuid}/variables/NOPE`).set(auth(ws.ownerToken))).status).toBe(
      404,
    );
    expect(
      (await stack.http.delete(`/api/v1/apps/${app.uuid}/secret_files/${app.uuid}`).set(auth(ws.ownerToken))).status,
    ).toBe(404);
    expect(await count()).toBe(before);
    expect(await stack.ds.query(`SELECT 1 FROM app_variables WHERE app_uuid = $1`, [app.uuid])).toHaveLength(0);
  });
});

describe('project variables and secret files: audit entries', () => {
  it('each of the four project routes records one entry on the project with the workspace token as actor; nothing secret in it', async () => {
    const resource = await createResource(stack.ds, ws.uuid, ws.regionId, 'audit-project-node', BIG_PLAN);
    const project = (
      await stack.http
        .post('/api/v1/projects')
        .set(auth(ws.ownerToken))
        .send({ name: 'audit-vars', resource_ids: [resource] })
        .expect(201)
    ).body.uuid;
    const token = await tokenWith(stack.ds, ws.uuid, ['projects:operate']);
    const [{ uuid: tokenUuid }] = await stack.ds.query(`SELECT uuid FROM api_tokens WHERE token_hash = $1`, [
      hashToken(token),
    ]);
    const hidden = 'project-hidden-value-2291';
    const content = 'project-file-content-secret-7731';
    await stack.http
      .put(`/api/v1/projects/${project}/variables`)
      .set(auth(token))
      .send({ variables: [{ key: 'DB_URL', value: hidden, secret: true }] })
      .expect(200);
    const [set] = await auditOf(project, 'project.variables_set');
    expect(set).toMatchObject({
      actor: { type: 'workspace_token', uuid: tokenUuid },
      resource_type: 'project',
      resource_uuid: project,
    });
    expect(set!.diff).toEqual({
      'variables.DB_URL': { to: 'secret' },
      'variables.DB_URL.value_sealed': { to: REDACTED },
    });

    await stack.http.delete(`/api/v1/projects/${project}/variables/DB_URL`).set(auth(token)).expect(204);
    const [removed] = await auditOf(project, 'project.variable_delete');
    expect(removed!.diff).toEqual({
      'variables.DB_URL': { from: 'secret' },
      'variables.DB_URL.value_sealed': { from: REDACTED },
    });

    const files = await stack.http
      .put(`/api/v1/projects/${project}/secret_files`)
      .set(auth(token))
      .send({ files: [{ name: 'ca.pem', content }] })
      .expect(200);
    const file = { uuid: files.body[0].uuid, size_bytes: Buffer.byteLength(content), sha256: digest(content) };
    const [stored] = await auditOf(project, 'project.secret_files_set');
    expect(stored).toMatchObject({ resource_type: 'project', resource_uuid: project });
    expect(stored!.diff).toEqual({ 'files.ca.pem': { to: file }, 'files.ca.pem.content_sealed': { to: REDACTED } });

    // the same content again is a no-op: one entry, empty diff
    await stack.http
      .put(`/api/v1/projects/${project}/secret_files`)
      .set(auth(token))
      .send({ files: [{ name: 'ca.pem', content }] })
      .expect(200);
    const sets = await auditOf(project, 'project.secret_files_set');
    expect(sets).toHaveLength(2);
    expect(sets[0]!.diff).toEqual({});

    await stack.http.delete(`/api/v1/projects/${project}/secret_files/${file.uuid}`).set(auth(token)).expect(204);
    const [gone] = await auditOf(project, 'project.secret_file_delete');
    expect(gone!.diff).toEqual({ 'files.ca.pem': { from: file }, 'files.ca.pem.content_sealed': { from: REDACTED } });

    const listed = await stack.http
      .get(`/api/v1/audit_events?resource_uuid=${project}`)
      .set(auth(ws.ownerToken))
      .expect(200);
    for (const s of [hidden, content]) expect(listed.text).not.toContain(s);
    expectNoSecretLeaks(stack, [hidden, content]);
  });
});
