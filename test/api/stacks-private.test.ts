import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { fixture, localRepo, type LocalRepo } from '../support/git';
import { startPrivateGitServer, type PrivateGitServer } from '../support/git-https';
import { expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';

let stack: TestStack;
let ws: Workspace;
let git: PrivateGitServer;
let source: LocalRepo;
let root: string;
const TOKEN = 'glpat-private-repo-token-0123456789';
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'berth-git-root-'));
  source = localRepo({ 'compose.yaml': fixture('web-postgres-cache.yaml') });
  execFileSync('git', ['clone', '--quiet', '--bare', source.dir, path.join(root, 'shop.git')]);
  git = await startPrivateGitServer(root, { username: 'deploy-bot', token: TOKEN });
  stack = await startStack({ env: { BERTH_GIT_CA_FILE: git.caFile } });
  ws = await seedWorkspace(stack.ds);
  await stack.startWorker();
});
afterAll(async () => {
  await stack.close();
  await git.close();
  source.dispose();
  rmSync(root, { recursive: true, force: true });
});

describe('stacks from a private repository', () => {
  it('STK-11 STK-05 credential_id serves a private HTTPS repository; without it the clone is refused', async () => {
    const url = git.url('shop.git');
    const anonymous = await stack.http
      .post('/api/v1/stacks/analyze')
      .set(auth(ws.ownerToken))
      .send({ repository_url: url, branch: 'main' });
    expect(anonymous.status).toBe(422);
    expect(anonymous.body.detail).toMatch(/could not clone/);
    const cred = await stack.http
      .post('/api/v1/container_registry_credentials')
      .set(auth(ws.ownerToken))
      .send({ name: 'gitlab-bot', registry: 'gitlab', username: 'deploy-bot', token: TOKEN });
    const res = await stack.http
      .post('/api/v1/stacks/analyze')
      .set(auth(ws.ownerToken))
      .send({ repository_url: url, branch: 'main', credential_id: cred.body.uuid });
    expect(res.status).toBe(200);
    expect(res.body.commit_sha).toBe(source.head());
    expect(res.body.manifest.required_variables).toEqual(['DB_PASSWORD', 'SECRET_KEY_BASE']);
    expect(git.seenAuthorizations).toContain(`Basic ${Buffer.from(`deploy-bot:${TOKEN}`).toString('base64')}`);
    const wrong = await stack.http
      .post('/api/v1/container_registry_credentials')
      .set(auth(ws.ownerToken))
      .send({ name: 'wrong', registry: 'gitlab', username: 'deploy-bot', token: 'glpat-wrong-token-000000' });
    expect(
      (
        await stack.http
          .post('/api/v1/stacks/analyze')
          .set(auth(ws.ownerToken))
          .send({ repository_url: url, branch: 'main', credential_id: wrong.body.uuid })
      ).status,
    ).toBe(422);
    expectNoSecretLeaks(stack, [TOKEN, Buffer.from(`deploy-bot:${TOKEN}`).toString('base64')]);
  });
});
