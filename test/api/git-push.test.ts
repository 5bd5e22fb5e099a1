import { execFile } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { SimulatedAppsControl } from '../../activities/provider/simulated/apps';
import { BIG_PLAN, createApp } from '../support/apps';
import { seedWorkspace, tokenWith, type Workspace } from '../support/fixtures';
import { eventually, expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';

/**
 * git_push apps over git's Smart HTTP, with the real git client against the API's real
 * HTTP server: the repository at git_url, HTTP Basic with a token, and a push to the
 * tracked branch deploying the pushed commit with its progress shown as `remote:` lines.
 */
let stack: TestStack;
let ws: Workspace;

beforeAll(async () => {
  stack = await startStack();
  await stack.startWorker();
  ws = await seedWorkspace(stack.ds, { plan: BIG_PLAN });
});
afterAll(async () => {
  await stack?.close();
});

interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the git client (asynchronously: the server answers in this process). */
function git(cwd: string, ...args: string[]): Promise<GitResult> {
  const env = {
    PATH: process.env.PATH,
    HOME: cwd,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '',
    LANG: 'C',
    GIT_AUTHOR_NAME: 'Test',
    GIT_AUTHOR_EMAIL: 't@example.test',
    GIT_COMMITTER_NAME: 'Test',
    GIT_COMMITTER_EMAIL: 't@example.test',
  };
  return new Promise((resolve) => {
    execFile('git', args, { cwd, env, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

/** A working copy with one commit on `branch`; answers its directory and the commit. */
async function workingCopy(
  branch = 'main',
): Promise<{ dir: string; sha: string; commit(message: string): Promise<string> }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'berth-push-'));
  await git(dir, 'init', '--quiet', '--initial-branch', branch);
  const commit = async (message: string) => {
    writeFileSync(
      path.join(dir, 'index.js'),
      `// ${message}\nrequire('http').createServer((q, s) => s.end('hi')).listen(process.env.PORT);\n`,
    );
    await git(dir, 'add', '.');
    await git(dir, 'commit', '--quiet', '-m', message);
    return (await git(dir, 'rev-parse', 'HEAD')).stdout.trim();
  };
  return { dir, sha: await commit('first'), commit };
}

/** git_url with credentials: any user name, the token as password. */
const withToken = (gitUrl: string, token: string | null) =>
  token ? gitUrl.replace('http://', `http://berth:${token}@`) : gitUrl;

async function runningGitPushApp(
  name: string,
  config: Record<string, unknown> = {},
): Promise<{ uuid: string; name: string; git_url: string; public_url: string }> {
  const app = await createApp(stack, ws.ownerToken, {
    name,
    resource_id: ws.resourceUuid,
    deployment_method: 'git_push',
    deployment_config: config,
  });
  await eventually(
    async () => (await stack.ds.query(`SELECT state FROM apps WHERE uuid = $1`, [app.uuid]))[0].state === 'running',
    { what: `${name} running`, timeoutMs: 60_000 },
  );
  return app;
}

const deployments = async (
  appUuid: string,
): Promise<Array<{ uuid: string; commit_sha: string; state: string; branch: string }>> =>
  stack.ds.query(
    `SELECT uuid, commit_sha, state, branch FROM app_deployments WHERE app_uuid = $1 ORDER BY created_at`,
    [appUuid],
  );

describe('git push', () => {
  it('APP-01 a git_push app has git_url <origin>/git/<name>.git (the suffixed name); other methods have none', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'urls', resource_id: ws.resourceUuid });
    expect(app.deployment_method).toBe('git_push');
    expect(app.git_url).toBe(`${stack.config.publicUrl}/git/${app.name}.git`);
    expect(app.name).not.toBe('urls');
    const image = await createApp(stack, ws.ownerToken, {
      name: 'img',
      resource_id: ws.resourceUuid,
      deployment_method: 'parent_image',
      deployment_config: { parent_app_id: app.uuid },
    });
    expect(image.git_url).toBeNull();
  });

  it("a new app's empty repository clones with a token (created on first access)", async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'empty', resource_id: ws.resourceUuid });
    const dir = mkdtempSync(path.join(tmpdir(), 'berth-clone-'));
    const cloned = await git(dir, 'clone', withToken(app.git_url, ws.ownerToken), 'copy');
    expect(cloned.stderr).toMatch(/cloned an empty repository/);
    expect(cloned.code).toBe(0);
    expect((await git(path.join(dir, 'copy'), 'status')).stdout).toMatch(/On branch main/);
  });

  it('AUTH-05 DEP-02 a push to the tracked branch deploys the pushed commit, attributed to the token, and shows its progress and end as remote: lines', async () => {
    const app = await runningGitPushApp('pushed');
    const wc = await workingCopy();
    const pushed = await git(wc.dir, 'push', withToken(app.git_url, ws.ownerToken), 'main');
    expect(pushed.code).toBe(0);
    const [d] = await deployments(app.uuid);
    expect(d).toMatchObject({ commit_sha: wc.sha, branch: 'main', state: 'completed' });
    expect(pushed.stderr).toContain(`remote: deploying ${wc.sha.slice(0, 12)} of main: deployment ${d!.uuid}`);
    expect(pushed.stderr).toMatch(/remote: deployment (pending|running)/);
    expect(pushed.stderr).toContain('remote: deployment completed');
    expect(pushed.stderr).toContain(`remote: deployed: ${app.public_url}`);
    const [audit] = await stack.ds.query(
      `SELECT actor_type, action, source FROM audit_events WHERE resource_uuid = $1`,
      [d!.uuid],
    );
    expect(audit).toEqual({ actor_type: 'member', action: 'deployment.create', source: 'api' });
    // the branch really is in the app's repository
    const remote = await git(wc.dir, 'ls-remote', withToken(app.git_url, ws.ownerToken));
    expect(remote.stdout).toContain(`${wc.sha}\trefs/heads/main`);
    const clones = mkdtempSync(path.join(tmpdir(), 'berth-clone-'));
    expect((await git(clones, 'clone', '--quiet', withToken(app.git_url, ws.ownerToken), 'copy')).code).toBe(0);
    expect((await git(path.join(clones, 'copy'), 'rev-parse', 'HEAD')).stdout.trim()).toBe(wc.sha);
    // a gzip request body (as git sends large negotiations) is git's to inflate: protocol v2 ls-refs, gzipped
    const lsRefs = await stack.http
      .post(`/git/${app.name}.git/git-upload-pack`)
      .auth('x', ws.ownerToken)
      .set({
        'Content-Type': 'application/x-git-upload-pack-request',
        'Content-Encoding': 'gzip',
        'Git-Protocol': 'version=2',
      })
      .send(gzipSync('0014command=ls-refs\n00010000'))
      .buffer(true)
      .parse((res, done) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => done(null, Buffer.concat(chunks).toString('utf8')));
      });
    expect(lsRefs.status).toBe(200);
    expect(lsRefs.body).toContain(`${wc.sha} refs/heads/main`);
    // a second push deploys the new commit
    const next = await wc.commit('second');
    const again = await git(wc.dir, 'push', withToken(app.git_url, ws.ownerToken), 'main');
    expect(again.stderr).toContain('remote: deployed:');
    expect((await deployments(app.uuid)).map((x) => x.commit_sha)).toEqual([wc.sha, next]);
    expectNoSecretLeaks(stack, [ws.ownerToken]);
  });

  it('a failed deployment ends the push output with failed: and its reason', async () => {
    const app = await runningGitPushApp('breaks');
    await SimulatedAppsControl.script(stack.ds, app.uuid, { buildFailure: 'npm ERR! missing script: build' });
    const wc = await workingCopy();
    const pushed = await git(wc.dir, 'push', withToken(app.git_url, ws.ownerToken), 'main');
    expect(pushed.code).toBe(0);
    expect(pushed.stderr).toContain('remote: failed: npm ERR! missing script: build');
  });

  it('the build log streams to the pusher as it grows, before the end', async () => {
    const app = await runningGitPushApp('logged');
    await SimulatedAppsControl.script(stack.ds, app.uuid, { buildHold: true });
    const wc = await workingCopy();
    const push = git(wc.dir, 'push', withToken(app.git_url, ws.ownerToken), 'main');
    const d = await eventually(async () => (await deployments(app.uuid)).find((x) => x.state === 'running'), {
      what: 'a running deployment',
    });
    const log = stack.apiDeps.localLayout!.buildLogFile(d.uuid);
    mkdirSync(path.dirname(log), { recursive: true });
    writeFileSync(log, 'Step 1/2 : installing dependencies\n');
    appendFileSync(log, 'Step 2/2 : building the rel');
    appendFileSync(log, 'ease\n');
    await new Promise((r) => setTimeout(r, 1500));
    await SimulatedAppsControl.script(stack.ds, app.uuid, { buildHold: false });
    const pushed = await push;
    expect(pushed.code).toBe(0);
    const lines = pushed.stderr.split('\n').map((l) => l.trim());
    const at = (text: string) => lines.indexOf(`remote: ${text}`);
    expect(at('deployment running')).toBeGreaterThan(0);
    expect(at('Step 1/2 : installing dependencies')).toBeGreaterThan(at('deployment running'));
    expect(at('Step 2/2 : building the release')).toBeGreaterThan(at('Step 1/2 : installing dependencies'));
    expect(at(`deployed: ${app.public_url}`)).toBeGreaterThan(at('Step 2/2 : building the release'));
  });

  it('a push while a deployment is under way waits its turn; a newer push supersedes a waiting one', async () => {
    const app = await runningGitPushApp('queued');
    await SimulatedAppsControl.script(stack.ds, app.uuid, { buildHold: true });
    const wc = await workingCopy();
    const url = withToken(app.git_url, ws.ownerToken);
    const first = git(wc.dir, 'push', url, 'main');
    await eventually(async () => (await deployments(app.uuid)).find((x) => x.state === 'running'), {
      what: 'the first deployment running',
    });
    const b = await wc.commit('second');
    const second = git(wc.dir, 'push', url, 'main');
    await eventually(async () => (await git(wc.dir, 'ls-remote', url, 'main')).stdout.startsWith(b), {
      what: 'the second push stored',
    });
    await new Promise((r) => setTimeout(r, 1500));
    const c = await wc.commit('third');
    const third = git(wc.dir, 'push', url, 'main');
    await eventually(async () => (await git(wc.dir, 'ls-remote', url, 'main')).stdout.startsWith(c), {
      what: 'the third push stored',
    });
    await new Promise((r) => setTimeout(r, 1500));
    await SimulatedAppsControl.script(stack.ds, app.uuid, { buildHold: false });
    const [one, two, three] = await Promise.all([first, second, third]);
    expect(one.stderr).toContain('remote: deployed:');
    expect(two.stderr).toContain('remote: waiting: a deployment of this app is in progress (the app is deploying)');
    expect(two.stderr).toContain('remote: not deployed: a newer push to main supersedes this one');
    expect(three.stderr).toContain('remote: waiting:');
    expect(three.stderr).toContain(`remote: deployed: ${app.public_url}`);
    expect((await deployments(app.uuid)).map((x) => [x.commit_sha, x.state])).toEqual([
      [wc.sha, 'completed'],
      [c, 'completed'],
    ]);
  });

  it('a push to another branch deploys nothing and says why', async () => {
    const app = await runningGitPushApp('branchy', { branch: 'production' });
    const wc = await workingCopy('feature');
    const pushed = await git(wc.dir, 'push', withToken(app.git_url, ws.ownerToken), 'feature');
    expect(pushed.code).toBe(0);
    expect(pushed.stderr).toContain(
      `remote: refs/heads/feature: nothing deployed: ${app.name} deploys only pushes to its branch production`,
    );
    expect(await deployments(app.uuid)).toEqual([]);
  });

  it('no credentials or a bad token: 401 with a Basic challenge; git refuses the push', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'locked', resource_id: ws.resourceUuid });
    const refs = `/git/${app.name}.git/info/refs?service=git-receive-pack`;
    const none = await stack.http.get(refs);
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Basic realm="berth"');
    const bad = await stack.http.get(refs).auth('x', 'not-a-token');
    expect(bad.status).toBe(401);
    expect(bad.headers['www-authenticate']).toBe('Basic realm="berth"');
    const wc = await workingCopy();
    const pushed = await git(wc.dir, 'push', app.git_url, 'main');
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toMatch(/Authentication failed|could not read Username/);
    expect(await deployments(app.uuid)).toEqual([]);
  });

  it('AUTH-03 AUTH-05 a view-only token cannot push (403), an apps:deploy token can; a token of another workspace finds no such repository (404)', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'guarded', resource_id: ws.resourceUuid });
    const other = await seedWorkspace(stack.ds);
    const foreign = await tokenWith(stack.ds, other.uuid, ['apps:view', 'apps:deploy']);
    const refs = `/git/${app.name}.git/info/refs?service=git-upload-pack`;
    expect((await stack.http.get(refs).auth('x', foreign)).status).toBe(404);
    const viewer = await tokenWith(stack.ds, ws.uuid, ['apps:view']);
    expect((await stack.http.get(refs).auth('x', viewer)).status).toBe(403);
    const deployer = await tokenWith(stack.ds, ws.uuid, ['apps:deploy']);
    expect((await stack.http.get(refs).auth('x', deployer)).status).toBe(200);
    const wc = await workingCopy();
    const refused = await git(wc.dir, 'push', withToken(app.git_url, viewer), 'main');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/403/);
    const unknown = await git(wc.dir, 'push', withToken(app.git_url, foreign), 'main');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/not found/);
    // an app that is not git_push has no repository
    const image = await createApp(stack, ws.ownerToken, {
      name: 'noimg',
      resource_id: ws.resourceUuid,
      deployment_method: 'parent_image',
      deployment_config: { parent_app_id: app.uuid },
    });
    const notGit = await stack.http
      .get(`/git/${image.name}.git/info/refs?service=git-upload-pack`)
      .auth('x', ws.ownerToken);
    expect(notGit.status).toBe(404);
    expect(notGit.body.detail).toMatch(/not git_push/);
    expect(await deployments(app.uuid)).toEqual([]);
  });

  it('concurrent first accesses create one repository', async () => {
    const app = await createApp(stack, ws.ownerToken, { name: 'racy', resource_id: ws.resourceUuid });
    const refs = `/git/${app.name}.git/info/refs?service=git-upload-pack`;
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        stack.http.get(refs).set({ Authorization: `Basic ${Buffer.from(`x:${ws.ownerToken}`).toString('base64')}` }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    const root = path.dirname(stack.apiDeps.localLayout!.gitRepo(app.name));
    expect(readdirSync(root).filter((f) => f.startsWith(app.name))).toEqual([`${app.name}.git`]);
    expect(readdirSync(path.join(root, `${app.name}.git`, 'hooks'))).toEqual(['post-receive']);
  });
});
