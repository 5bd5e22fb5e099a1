import { seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';
import { REGISTRY_PROVIDERS } from '../../domain/registries';
import { openRegistryCredential, openWorkspaceRegistryLogins } from '../../activities/registry-credentials';

let stack: TestStack;
let ws: Workspace;
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });
const base = '/api/v1/container_registry_credentials';
const tokens: string[] = [];
let n = 0;
function token(): string {
  n += 1;
  const t = `ghp_registrytoken${n}xyzXYZ0123456789`;
  tokens.push(t);
  return t;
}

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
});
afterAll(() => stack.close());

describe('container registry credentials', () => {
  it('REG-06 REG-04 create, then GET /container_registry_credentials/{uuid} returns one credential without its token', async () => {
    const t = token();
    const created = await stack.http
      .post(base)
      .set(auth(ws.ownerToken))
      .send({ name: 'hub', registry: 'docker_hub', username: 'deploy', token: t });
    expect(created.status).toBe(201);
    expect(created.headers.location).toBe(`${base}/${created.body.uuid}`);
    expect(created.body).toEqual({
      uuid: expect.any(String),
      name: 'hub',
      registry: 'docker_hub',
      username: 'deploy',
      registry_hostname: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const shown = await stack.http.get(`${base}/${created.body.uuid}`).set(auth(ws.ownerToken));
    expect(shown.status).toBe(200);
    expect(shown.body).toEqual(created.body);
    const [row] = await stack.ds.query(`SELECT token_sealed FROM container_registry_credentials WHERE uuid = $1`, [
      created.body.uuid,
    ]);
    expect(row.token_sealed).not.toContain(t);
    expect(stack.secretBox.open(row.token_sealed)).toBe(t);
    expect((await stack.http.get(`${base}/00000000-0000-4000-8000-000000000009`).set(auth(ws.ownerToken))).status).toBe(
      404,
    );
  });

  it('REG-01 a name is unique per workspace (409), and free in another workspace', async () => {
    await stack.http
      .post(base)
      .set(auth(ws.ownerToken))
      .send({ name: 'dup', registry: 'quay', username: 'u', token: token() })
      .expect(201);
    const again = await stack.http
      .post(base)
      .set(auth(ws.ownerToken))
      .send({ name: 'dup', registry: 'github', username: 'u', token: token() });
    expect(again.status).toBe(409);
    const other = await seedWorkspace(stack.ds);
    await stack.http
      .post(base)
      .set(auth(other.ownerToken))
      .send({ name: 'dup', registry: 'quay', username: 'u', token: token() })
      .expect(201);
    const second = await stack.http
      .post(base)
      .set(auth(ws.ownerToken))
      .send({ name: 'dup2', registry: 'quay', username: 'u', token: token() });
    expect(
      (await stack.http.put(`${base}/${second.body.uuid}`).set(auth(ws.ownerToken)).send({ name: 'dup' })).status,
    ).toBe(409);
    // Workspaces do not see each other's credentials.
    expect((await stack.http.get(`${base}/${second.body.uuid}`).set(auth(other.ownerToken))).status).toBe(404);
  });

  it('REG-02 registry is generic or one of seven provider values', async () => {
    expect(REGISTRY_PROVIDERS).toHaveLength(8);
    for (const registry of REGISTRY_PROVIDERS) {
      const res = await stack.http
        .post(base)
        .set(auth(ws.ownerToken))
        .send({
          name: `r-${registry}`,
          registry,
          username: 'u',
          token: token(),
          registry_hostname: 'registry.example.com',
        });
      expect(res.status).toBe(201);
      expect(res.body.registry).toBe(registry);
    }
    const bad = await stack.http
      .post(base)
      .set(auth(ws.ownerToken))
      .send({ name: 'bad', registry: 'dockerhub', username: 'u', token: token() });
    expect(bad.status).toBe(400);
  });

  it('REG-03 registry_hostname is required for generic and the two cloud-vendor values, optional for the others', async () => {
    for (const registry of ['generic', 'aws_ecr', 'google_artifact_registry']) {
      const res = await stack.http
        .post(base)
        .set(auth(ws.ownerToken))
        .send({ name: `nohost-${registry}`, registry, username: 'u', token: token() });
      expect(res.status).toBe(422);
      expect(res.body.errors[0].path).toBe('body.registry_hostname');
    }
    for (const registry of ['docker_hub', 'github', 'gitlab', 'digitalocean', 'quay']) {
      await stack.http
        .post(base)
        .set(auth(ws.ownerToken))
        .send({ name: `nohost-${registry}`, registry, username: 'u', token: token() })
        .expect(201);
    }
    const ecr = await stack.http.post(base).set(auth(ws.ownerToken)).send({
      name: 'ecr',
      registry: 'aws_ecr',
      username: 'AWS',
      token: token(),
      registry_hostname: '123456789012.dkr.ecr.eu-west-1.amazonaws.com',
    });
    expect(ecr.status).toBe(201);
    // Switching a credential to generic without a hostname, or clearing a required one, is refused.
    const hub = await stack.http
      .post(base)
      .set(auth(ws.ownerToken))
      .send({ name: 'to-generic', registry: 'docker_hub', username: 'u', token: token() });
    expect(
      (await stack.http.put(`${base}/${hub.body.uuid}`).set(auth(ws.ownerToken)).send({ registry: 'generic' })).status,
    ).toBe(422);
    expect(
      (await stack.http.put(`${base}/${ecr.body.uuid}`).set(auth(ws.ownerToken)).send({ registry_hostname: null }))
        .status,
    ).toBe(422);
    expect(
      (
        await stack.http.post(base).set(auth(ws.ownerToken)).send({
          name: 'schemey',
          registry: 'generic',
          username: 'u',
          token: token(),
          registry_hostname: 'https://r.example.com/v2',
        })
      ).status,
    ).toBe(400);
  });

  it('REG-04 tokens are never returned: update, list, show and logs never carry one', async () => {
    const created = await stack.http
      .post(base)
      .set(auth(ws.ownerToken))
      .send({ name: 'rotate', registry: 'gitlab', username: 'ci', token: token() });
    const fresh = token();
    const updated = await stack.http
      .put(`${base}/${created.body.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ token: fresh, username: 'ci2' });
    expect(updated.status).toBe(200);
    expect(updated.body.username).toBe('ci2');
    const [row] = await stack.ds.query(`SELECT token_sealed FROM container_registry_credentials WHERE uuid = $1`, [
      created.body.uuid,
    ]);
    expect(stack.secretBox.open(row.token_sealed)).toBe(fresh);
    const list = await stack.http.get(base).set(auth(ws.ownerToken));
    expect(Array.isArray(list.body)).toBe(true);
    expect(list.body.every((c: Record<string, unknown>) => !('token' in c) && !('token_sealed' in c))).toBe(true);
    expectNoSecretLeaks(stack, tokens);
  });

  it('permissions: apps:view reads, apps:manage writes; delete removes the credential', async () => {
    const viewer = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    const manager = await tokenWith(stack.ds, ws.uuid, ['apps:manage']);
    expect(
      (
        await stack.http
          .post(base)
          .set(auth(viewer))
          .send({ name: 'v', registry: 'quay', username: 'u', token: token() })
      ).status,
    ).toBe(403);
    const created = await stack.http
      .post(base)
      .set(auth(manager))
      .send({ name: 'm', registry: 'quay', username: 'u', token: token() });
    expect(created.status).toBe(201);
    expect((await stack.http.get(`${base}/${created.body.uuid}`).set(auth(viewer))).status).toBe(200);
    expect((await stack.http.delete(`${base}/${created.body.uuid}`).set(auth(viewer))).status).toBe(403);
    await stack.http.delete(`${base}/${created.body.uuid}`).set(auth(manager)).expect(204);
    expect((await stack.http.get(`${base}/${created.body.uuid}`).set(auth(viewer))).status).toBe(404);
  });

  it('REG-05 an app references a credential by its uuid as deployment_config.credential_id: it resolves within its workspace only, with the pull server and the opened token', async () => {
    const t = token();
    const ghcr = await stack.http
      .post(base)
      .set(auth(ws.ownerToken))
      .send({ name: 'pull-ghcr', registry: 'github', username: 'octo', token: t });
    const auth1 = await openRegistryCredential(stack.activityDeps, ws.uuid, ghcr.body.uuid);
    expect(auth1).toEqual({ registry: 'github', server: 'ghcr.io', username: 'octo', token: t });
    const ecr = await stack.http.post(base).set(auth(ws.ownerToken)).send({
      name: 'pull-ecr',
      registry: 'aws_ecr',
      username: 'AWS',
      token: token(),
      registry_hostname: '1234.dkr.ecr.eu-west-1.amazonaws.com',
    });
    expect((await openRegistryCredential(stack.activityDeps, ws.uuid, ecr.body.uuid))!.server).toBe(
      '1234.dkr.ecr.eu-west-1.amazonaws.com',
    );
    const other = await seedWorkspace(stack.ds);
    expect(await openRegistryCredential(stack.activityDeps, other.uuid, ghcr.body.uuid)).toBeNull();
    expectNoSecretLeaks(stack, [t]);
  });

  it("a Dockerfile build gets its workspace's credentials as logins (opened, newest first), never another workspace's", async () => {
    const other = await seedWorkspace(stack.ds);
    const before = await openWorkspaceRegistryLogins(stack.activityDeps, ws.uuid);
    const t = token();
    await stack.http
      .post(base)
      .set(auth(ws.ownerToken))
      .send({ name: 'from-quay', registry: 'quay', username: 'robot', token: t })
      .expect(201);
    const [newest, ...rest] = await openWorkspaceRegistryLogins(stack.activityDeps, ws.uuid);
    expect(newest).toEqual({ server: 'quay.io', username: 'robot', token: t });
    expect(rest).toHaveLength(before.length);
    expect(await openWorkspaceRegistryLogins(stack.activityDeps, other.uuid)).toEqual([]);
    expectNoSecretLeaks(stack, [t]);
  });
});
