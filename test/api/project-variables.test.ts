import { createHash, randomUUID } from 'node:crypto';
import { createAppActivities } from '../../activities/apps';
import { effectiveEnvironment } from '../../activities/app-environment';
import { auth, BIG_PLAN, createApp } from '../support/apps';
import { createResource, memberWith, seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';

/** Variables and secret files of a project, the effective environment of its apps and the redeploy mark. */
let stack: TestStack;
let ws: Workspace;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
});
afterAll(() => stack?.close());

/** A project with a compute resource of its own (a resource assigned to projects only takes their apps). */
async function project(name: string): Promise<string> {
  const resource = await createResource(stack.ds, ws.uuid, ws.regionId, `${name}-node`, BIG_PLAN);
  const res = await stack.http
    .post('/api/v1/projects')
    .set(auth(ws.ownerToken))
    .send({ name, resource_ids: [resource] });
  expect(res.status).toBe(201);
  resources.set(res.body.uuid, resource);
  return res.body.uuid;
}
const resources = new Map<string, string>();

describe('project variables and secret files', () => {
  it('AUTH-12 projects:operate or projects:manage set many variables (sealed) and secret files whose content is never returned; others get 403', async () => {
    const p = await project('vars');
    const operate = await tokenWith(stack.ds, ws.uuid, ['projects:operate']);
    const manage = await tokenWith(stack.ds, ws.uuid, ['projects:manage']);
    const viewer = await tokenWith(stack.ds, ws.uuid, ['projects:view', 'apps:manage']);
    const value = 'postgres://user:project-secret-value-77@db/x';
    const set = await stack.http
      .put(`/api/v1/projects/${p}/variables`)
      .set(auth(operate))
      .send({
        variables: [
          { key: 'DATABASE_URL', value },
          { key: '_FLAG', value: '' },
        ],
      });
    expect(set.status).toBe(200);
    expect(set.body.map((v: any) => [v.key, v.value])).toEqual([
      ['DATABASE_URL', value],
      ['_FLAG', ''],
    ]);
    const [row] = await stack.ds.query(
      `SELECT value_sealed FROM project_variables WHERE project_uuid = $1 AND key = 'DATABASE_URL'`,
      [p],
    );
    expect(row.value_sealed).not.toContain('project-secret-value-77');
    const again = await stack.http
      .put(`/api/v1/projects/${p}/variables`)
      .set(auth(manage))
      .send({ variables: [{ key: '_FLAG', value: 'on' }] });
    expect(again.body.map((v: any) => [v.key, v.value])).toEqual([
      ['DATABASE_URL', value],
      ['_FLAG', 'on'],
    ]);
    expect((await stack.http.get(`/api/v1/projects/${p}/variables`).set(auth(viewer))).status).toBe(403);
    expect(
      (
        await stack.http
          .put(`/api/v1/projects/${p}/variables`)
          .set(auth(viewer))
          .send({ variables: [{ key: 'A', value: 'b' }] })
      ).status,
    ).toBe(403);
    for (const key of ['1ABC', 'A-B', 'A B', '']) {
      expect(
        (
          await stack.http
            .put(`/api/v1/projects/${p}/variables`)
            .set(auth(operate))
            .send({ variables: [{ key, value: 'v' }] })
        ).status,
      ).toBe(400);
    }
    expect(
      (
        await stack.http
          .put(`/api/v1/projects/${p}/variables`)
          .set(auth(operate))
          .send({
            variables: [
              { key: 'A', value: '1' },
              { key: 'A', value: '2' },
            ],
          })
      ).status,
    ).toBe(422);
    expect((await stack.http.delete(`/api/v1/projects/${p}/variables/_FLAG`).set(auth(operate))).status).toBe(204);
    expect((await stack.http.delete(`/api/v1/projects/${p}/variables/_FLAG`).set(auth(operate))).status).toBe(404);
    expect(
      (await stack.http.get(`/api/v1/projects/${p}/variables`).set(auth(manage))).body.map((v: any) => v.key),
    ).toEqual(['DATABASE_URL']);

    const content = '-----BEGIN KEY-----\nproject-file-content-secret-99\n-----END KEY-----\n';
    const files = await stack.http
      .put(`/api/v1/projects/${p}/secret_files`)
      .set(auth(manage))
      .send({ files: [{ name: 'ca.pem', content }] });
    expect(files.status).toBe(200);
    expect(files.body).toEqual([
      {
        uuid: expect.any(String),
        name: 'ca.pem',
        size_bytes: Buffer.byteLength(content),
        sha256: createHash('sha256').update(content).digest('hex'),
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
    ]);
    const listed = await stack.http.get(`/api/v1/projects/${p}/secret_files`).set(auth(operate));
    expect(listed.body.map((f: any) => f.name)).toEqual(['ca.pem']);
    expect(JSON.stringify(listed.body)).not.toContain('project-file-content-secret-99');
    expect(
      (
        await stack.http
          .put(`/api/v1/projects/${p}/secret_files`)
          .set(auth(manage))
          .send({ files: [{ name: '../etc/passwd', content: 'x' }] })
      ).status,
    ).toBe(400);
    expect((await stack.http.get(`/api/v1/projects/${p}/secret_files`).set(auth(viewer))).status).toBe(403);
    expect(
      (await stack.http.delete(`/api/v1/projects/${p}/secret_files/${files.body[0].uuid}`).set(auth(operate))).status,
    ).toBe(204);
    expect(
      (await stack.http.delete(`/api/v1/projects/${p}/secret_files/${files.body[0].uuid}`).set(auth(operate))).status,
    ).toBe(404);
    // file contents never leave, in responses or logs; variable values only in the responses that list them
    expectNoSecretLeaks(stack, ['project-file-content-secret-99', row.value_sealed, value], {
      allowInResponses: [value],
    });
  });

  it("AUTH-12 PRJ-04 a restricted project's variables are 404 to a member it is closed to", async () => {
    const p = await project('closed');
    const outsider = await memberWith(stack.ds, ws.uuid, 'developer', ['projects:operate', 'projects:manage']);
    const insider = await memberWith(stack.ds, ws.uuid, 'developer', ['projects:operate']);
    await stack.http
      .post(`/api/v1/projects/${p}/restrictions`)
      .set(auth(ws.ownerToken))
      .send({ subject_type: 'user', user_uuid: insider.userUuid })
      .expect(201);
    expect((await stack.http.get(`/api/v1/projects/${p}/variables`).set(auth(outsider.token))).status).toBe(404);
    expect(
      (
        await stack.http
          .put(`/api/v1/projects/${p}/variables`)
          .set(auth(outsider.token))
          .send({ variables: [{ key: 'A', value: 'b' }] })
      ).status,
    ).toBe(404);
    expect((await stack.http.get(`/api/v1/projects/${p}/secret_files`).set(auth(outsider.token))).status).toBe(404);
    expect(await stack.ds.query(`SELECT 1 FROM project_variables WHERE project_uuid = $1`, [p])).toHaveLength(0);
    expect(
      (
        await stack.http
          .put(`/api/v1/projects/${p}/variables`)
          .set(auth(insider.token))
          .send({ variables: [{ key: 'A', value: 'b' }] })
      ).status,
    ).toBe(200);
    expect((await stack.http.get(`/api/v1/projects/${randomUUID()}/variables`).set(auth(ws.ownerToken))).status).toBe(
      404,
    );
  });
});

describe('app variables: the secrets scan', () => {
  it('AUTH-07 app variable values reach only the variables listing, never a log; secret file contents and sealed forms reach neither', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'scan', resource_id: ws.resourceUuid });
    const operate = await tokenWith(stack.ds, ws.uuid, ['apps:operate']);
    const view = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    const value = 'app-variable-secret-value-31';
    const content = 'app-secret-file-content-53';
    await stack.http
      .put(`/api/v1/apps/${app.uuid}/variables`)
      .set(auth(operate))
      .send({ variables: [{ key: 'API_KEY', value }] })
      .expect(200);
    await stack.http
      .put(`/api/v1/apps/${app.uuid}/secret_files`)
      .set(auth(operate))
      .send({ files: [{ name: 'key.txt', content }] })
      .expect(200);
    expect((await stack.http.get(`/api/v1/apps/${app.uuid}/variables`).set(auth(view))).status).toBe(403);
    expect(
      (
        await stack.http
          .put(`/api/v1/apps/${app.uuid}/secret_files`)
          .set(auth(view))
          .send({ files: [{ name: 'k', content: 'x' }] })
      ).status,
    ).toBe(403);
    await stack.http.get(`/api/v1/apps/${app.uuid}`).set(auth(ws.ownerToken)).expect(200);
    await stack.http.get(`/api/v1/apps/${app.uuid}/secret_files`).set(auth(operate)).expect(200);
    const [{ v }] = await stack.ds.query(`SELECT value_sealed AS v FROM app_variables WHERE app_uuid = $1`, [app.uuid]);
    const [{ c }] = await stack.ds.query(`SELECT content_sealed AS c FROM app_secret_files WHERE app_uuid = $1`, [
      app.uuid,
    ]);
    expect(stack.responseBodies.filter((b) => b.includes(value)).every((b) => b.includes('"key":"API_KEY"'))).toBe(
      true,
    );
    expectNoSecretLeaks(stack, [value, content, v, c], { allowInResponses: [value] });
  });
});

describe('effective environment and the redeploy mark', () => {
  it("the effective environment is the project's variables overlaid by the app's own", async () => {
    const p = await project('env');
    const app = await createApp(stack, ws.ownerToken, {
      name: 'env-app',
      resource_id: resources.get(p),
      project_id: p,
    });
    const elsewhere = await createApp(stack, ws.ownerToken, { name: 'no-project', resource_id: ws.resourceUuid });
    await stack.http
      .put(`/api/v1/projects/${p}/variables`)
      .set(auth(ws.ownerToken))
      .send({
        variables: [
          { key: 'LOG_LEVEL', value: 'info' },
          { key: 'REGION', value: 'eu' },
        ],
      })
      .expect(200);
    await stack.http
      .put(`/api/v1/apps/${app.uuid}/variables`)
      .set(auth(ws.ownerToken))
      .send({
        variables: [
          { key: 'LOG_LEVEL', value: 'debug' },
          { key: 'PORT', value: '3000' },
        ],
      })
      .expect(200);
    expect(await effectiveEnvironment(stack.ds, stack.activityDeps.secretBox, app.uuid)).toEqual({
      LOG_LEVEL: 'debug',
      REGION: 'eu',
      PORT: '3000',
    });
    expect(await effectiveEnvironment(stack.ds, stack.activityDeps.secretBox, elsewhere.uuid)).toEqual({});

    // the rollout hands that environment to the data plane (the simulator keeps names and a digest)
    await stack.ds.query(`INSERT INTO sim_apps (app_uuid) VALUES ($1) ON CONFLICT DO NOTHING`, [app.uuid]);
    const { rolloutImage } = createAppActivities(stack.activityDeps);
    await rolloutImage(app.uuid, 'registry.local/env-app:1');
    const [sim] = await stack.ds.query(`SELECT env_keys, env_digest FROM sim_apps WHERE app_uuid = $1`, [app.uuid]);
    expect(sim.env_keys).toEqual(['LOG_LEVEL', 'PORT', 'REGION']);
    expect(sim.env_digest).toBe(
      createHash('sha256')
        .update(
          JSON.stringify([
            ['LOG_LEVEL', 'debug'],
            ['PORT', '3000'],
            ['REGION', 'eu'],
          ]),
        )
        .digest('hex'),
    );
  });

  it("a project variable change marks the project's apps as needing a redeploy (not restarted); a completed deployment clears it", async () => {
    const p = await project('redeploy');
    const inside = await createApp(stack, ws.ownerToken, {
      name: 'inside',
      resource_id: resources.get(p),
      project_id: p,
    });
    const outside = await createApp(stack, ws.ownerToken, { name: 'outside', resource_id: ws.resourceUuid });
    expect(inside.needs_redeploy).toBe(false);
    const stateBefore = (await stack.ds.query(`SELECT state FROM apps WHERE uuid = $1`, [inside.uuid]))[0].state;
    const commands = async () =>
      (
        await stack.ds.query(
          `SELECT count(*)::int AS n FROM operations WHERE resource_uuid = $1 AND operation = 'app-command'`,
          [inside.uuid],
        )
      )[0].n;
    const commandsBefore = await commands();
    await stack.http
      .put(`/api/v1/projects/${p}/variables`)
      .set(auth(ws.ownerToken))
      .send({ variables: [{ key: 'FEATURE', value: 'on' }] })
      .expect(200);
    expect((await stack.http.get(`/api/v1/apps/${inside.uuid}`).set(auth(ws.ownerToken))).body.needs_redeploy).toBe(
      true,
    );
    expect((await stack.http.get(`/api/v1/apps/${outside.uuid}`).set(auth(ws.ownerToken))).body.needs_redeploy).toBe(
      false,
    );
    expect((await stack.ds.query(`SELECT state FROM apps WHERE uuid = $1`, [inside.uuid]))[0].state).toBe(stateBefore);
    expect(await commands()).toBe(commandsBefore);

    // an app's own variable change marks that app only
    await stack.http
      .put(`/api/v1/apps/${outside.uuid}/variables`)
      .set(auth(ws.ownerToken))
      .send({ variables: [{ key: 'X', value: '1' }] })
      .expect(200);
    expect((await stack.http.get(`/api/v1/apps/${outside.uuid}`).set(auth(ws.ownerToken))).body.needs_redeploy).toBe(
      true,
    );

    // a deployment that began before the change keeps the mark; one that began after clears it
    const { finishDeployment } = createAppActivities(stack.activityDeps);
    const old = randomUUID();
    const fresh = randomUUID();
    const deployment = (uuid: string, age: string) =>
      stack.ds.query(
        `INSERT INTO app_deployments (uuid, app_uuid, workspace_uuid, state, deployment_method, created_at)
      VALUES ($1, $2, $3, 'running', 'git_push', now() + $4::interval)`,
        [uuid, inside.uuid, ws.uuid, age],
      );
    await deployment(old, '-1 hour');
    expect(await finishDeployment(old, 'completed', null)).toBe(true);
    expect((await stack.http.get(`/api/v1/apps/${inside.uuid}`).set(auth(ws.ownerToken))).body.needs_redeploy).toBe(
      true,
    );
    await deployment(fresh, '1 second');
    expect(await finishDeployment(fresh, 'completed', null)).toBe(true);
    expect((await stack.http.get(`/api/v1/apps/${inside.uuid}`).set(auth(ws.ownerToken))).body.needs_redeploy).toBe(
      false,
    );
  });
});
