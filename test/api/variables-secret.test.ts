import { createHash } from 'node:crypto';
import { createAppActivities } from '../../activities/apps';
import { effectiveEnvironment } from '../../activities/app-environment';
import { auth, BIG_PLAN, createApp } from '../support/apps';
import { createResource, seedWorkspace, type Workspace } from '../support/fixtures';
import { expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';

/** Variables marked secret: listed by key, size and digest only, kept secret, still in the app's environment, copied secret by a clone. */
let stack: TestStack;
let ws: Workspace;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
});
afterAll(() => stack?.close());

const digest = (s: string) => createHash('sha256').update(s).digest('hex');
const listed = (key: string, value: string, secret: boolean) => ({
  key,
  secret,
  value: secret ? null : value,
  size_bytes: Buffer.byteLength(value),
  sha256: digest(value),
  created_at: expect.any(String),
  updated_at: expect.any(String),
});

describe('secret variables', () => {
  it('a variable marked secret is listed with its key, size and digest but a null value; set again without the flag it stays secret', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'secret-flag', resource_id: ws.resourceUuid });
    const first = 'first-secret-value-é-3301';
    const second = 'second-secret-value-4402';
    const put = (variables: unknown[]) =>
      stack.http.put(`/api/v1/apps/${app.uuid}/variables`).set(auth(ws.ownerToken)).send({ variables });
    const set = await put([
      { key: 'VISIBLE', value: 'shown-value' },
      { key: 'SIGNING_KEY', value: first, secret: true },
    ]);
    expect(set.status).toBe(200);
    expect(set.body).toEqual([listed('SIGNING_KEY', first, true), listed('VISIBLE', 'shown-value', false)]);
    expect(set.body[0].size_bytes).toBe(Buffer.from(first, 'utf8').length);

    // omitting the flag, or sending false, keeps it secret (secret = old OR new); the new value is stored
    expect((await put([{ key: 'SIGNING_KEY', value: second }])).body[0]).toEqual(listed('SIGNING_KEY', second, true));
    expect((await put([{ key: 'SIGNING_KEY', value: second, secret: false }])).body[0]).toEqual(
      listed('SIGNING_KEY', second, true),
    );
    // the contract's boolean strings: '1' marks a plain variable secret
    expect((await put([{ key: 'VISIBLE', value: 'shown-value', secret: '1' }])).body[1]).toEqual(
      listed('VISIBLE', 'shown-value', true),
    );
    for (const secret of ['yes', 1, null]) expect((await put([{ key: 'OTHER', value: 'x', secret }])).status).toBe(400);
    const get = await stack.http.get(`/api/v1/apps/${app.uuid}/variables`).set(auth(ws.ownerToken));
    expect(get.body).toEqual([listed('SIGNING_KEY', second, true), listed('VISIBLE', 'shown-value', true)]);
    const [row] = await stack.ds.query(
      `SELECT value_sealed, secret FROM app_variables WHERE app_uuid = $1 AND key = 'SIGNING_KEY'`,
      [app.uuid],
    );
    expect(row.secret).toBe(true);
    expect(row.value_sealed).not.toContain('second-secret');

    // the value is still the app's environment, and the rollout hands it to the data plane
    expect(await effectiveEnvironment(stack.ds, stack.activityDeps.secretBox, app.uuid)).toEqual({
      SIGNING_KEY: second,
      VISIBLE: 'shown-value',
    });
    await stack.ds.query(`INSERT INTO sim_apps (app_uuid) VALUES ($1) ON CONFLICT DO NOTHING`, [app.uuid]);
    await createAppActivities(stack.activityDeps).rolloutImage(app.uuid, 'registry.local/secret-flag:1');
    const [sim] = await stack.ds.query(`SELECT env_keys, env_digest FROM sim_apps WHERE app_uuid = $1`, [app.uuid]);
    expect(sim.env_keys).toEqual(['SIGNING_KEY', 'VISIBLE']);
    expect(sim.env_digest).toBe(
      digest(
        JSON.stringify([
          ['SIGNING_KEY', second],
          ['VISIBLE', 'shown-value'],
        ]),
      ),
    );

    // to unmark it: delete it and set it again
    await stack.http.delete(`/api/v1/apps/${app.uuid}/variables/SIGNING_KEY`).set(auth(ws.ownerToken)).expect(204);
    expect((await put([{ key: 'SIGNING_KEY', value: 'now-plain-value' }])).body[0]).toEqual(
      listed('SIGNING_KEY', 'now-plain-value', false),
    );
    expectNoSecretLeaks(stack, [first, second, row.value_sealed]);
  });

  it("a project variable marked secret is hidden in the listing and reaches its apps' environment (an app's own key still wins)", async () => {
    const resource = await createResource(stack.ds, ws.uuid, ws.regionId, 'secret-project-node', BIG_PLAN);
    const project = (
      await stack.http
        .post('/api/v1/projects')
        .set(auth(ws.ownerToken))
        .send({ name: 'secret-vars', resource_ids: [resource] })
        .expect(201)
    ).body.uuid;
    const app = await createApp(stack, ws.ownerToken, {
      name: 'in-secret-project',
      resource_id: resource,
      project_id: project,
    });
    const hidden = 'project-secret-value-5519';
    const set = await stack.http
      .put(`/api/v1/projects/${project}/variables`)
      .set(auth(ws.ownerToken))
      .send({
        variables: [
          { key: 'DB_PASSWORD', value: hidden, secret: true },
          { key: 'REGION', value: 'eu-west', secret: true },
        ],
      });
    expect(set.status).toBe(200);
    expect(set.body).toEqual([listed('DB_PASSWORD', hidden, true), listed('REGION', 'eu-west', true)]);
    expect(
      (
        await stack.http
          .put(`/api/v1/projects/${project}/variables`)
          .set(auth(ws.ownerToken))
          .send({ variables: [{ key: 'DB_PASSWORD', value: hidden }] })
      ).body[0].secret,
    ).toBe(true);
    await stack.http
      .put(`/api/v1/apps/${app.uuid}/variables`)
      .set(auth(ws.ownerToken))
      .send({ variables: [{ key: 'REGION', value: 'us-east' }] })
      .expect(200);
    expect(await effectiveEnvironment(stack.ds, stack.activityDeps.secretBox, app.uuid)).toEqual({
      DB_PASSWORD: hidden,
      REGION: 'us-east',
    });
    expectNoSecretLeaks(stack, [hidden]);
  });

  it('an app clone with clone_variables copies the secret flag with the value', async () => {
    const source = await createApp(stack, ws.ownerToken, { name: 'clone-src', resource_id: ws.resourceUuid });
    const target = await createApp(stack, ws.ownerToken, { name: 'clone-dst', resource_id: ws.resourceUuid });
    const hidden = 'cloned-secret-value-6620';
    await stack.http
      .put(`/api/v1/apps/${source.uuid}/variables`)
      .set(auth(ws.ownerToken))
      .send({
        variables: [
          { key: 'TOKEN', value: hidden, secret: true },
          { key: 'MODE', value: 'plain-mode' },
        ],
      })
      .expect(200);
    await createAppActivities(stack.activityDeps).copyAppSettings(source.uuid, target.uuid, {
      clone_variables: true,
      clone_secret_files: false,
      clone_scaling_settings: false,
      clone_health_checks: false,
      clone_security: false,
    });
    const copied = await stack.http.get(`/api/v1/apps/${target.uuid}/variables`).set(auth(ws.ownerToken));
    expect(copied.body).toEqual([listed('MODE', 'plain-mode', false), listed('TOKEN', hidden, true)]);
    expect(await effectiveEnvironment(stack.ds, stack.activityDeps.secretBox, target.uuid)).toEqual({
      MODE: 'plain-mode',
      TOKEN: hidden,
    });
    expectNoSecretLeaks(stack, [hidden]);
  });

  it('the reference documents value as null when the variable is secret', async () => {
    const doc = (await stack.http.get('/api/v1/openapi.json').expect(200)).body;
    for (const path of ['/api/v1/apps/{uuid}/variables', '/api/v1/projects/{uuid}/variables']) {
      for (const method of ['get', 'put']) {
        const schema = doc.paths[path][method].responses['200'].content['application/json'].schema;
        expect(schema.items.properties.value).toMatchObject({
          type: ['string', 'null'],
          description: expect.stringContaining('null when the variable is secret'),
        });
        expect(schema.items.properties.secret).toMatchObject({ type: 'boolean' });
        expect(schema.items.required).toEqual(expect.arrayContaining(['key', 'secret', 'size_bytes', 'sha256']));
      }
      expect(
        doc.paths[path].put.requestBody.content['application/json'].schema.properties.variables.items.properties,
      ).toHaveProperty('secret');
    }
  });
});
