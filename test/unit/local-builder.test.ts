import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { localBuildRefusal } from '../../activities/provider/local/builds/refusal';
import { imageRuntimeRefusal, PODMAN } from '../../activities/provider/local/images/runtime';
import { NOTHING_DETECTED } from '../../activities/provider/local/builds/detect';
import { buildRecordFile, writeBuildRecord } from '../../activities/provider/local/builds/record';
import { INTERRUPTED, LocalReleaseBuilder } from '../../activities/provider/local/builds/builder';
import { detectIsolation } from '../../activities/provider/local/sandbox/isolation';
import type { BuildStatus } from '../../platform/drivers/apps';
import { parseBuildLog } from '../../platform/build-log';
import { appUid, localLayout, parseReleaseImage, releaseImage, type LocalLayout } from '../../platform/local-layout';
import { appFixture, localRepo, type LocalRepo } from '../support/git';
import { startPrivateGitServer } from '../support/git-https';
import { captureLogger } from '../support/stack';

const isRoot = process.getuid?.() === 0;
let dataDir: string;
let appsDir: string;
let layout: LocalLayout;
let builder: LocalReleaseBuilder;
const repos: LocalRepo[] = [];
const isolation = detectIsolation();

function newBuilder(options: { allowFileUrls?: boolean } = {}): LocalReleaseBuilder {
  return new LocalReleaseBuilder({
    layout,
    isolation,
    logger: captureLogger().logger,
    allowFileUrls: options.allowFileUrls ?? true,
  });
}

beforeAll(() => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'berth-data-'));
  appsDir = mkdtempSync(path.join(tmpdir(), 'berth-apps-'));
  layout = localLayout({ dataDir, appsDir });
  builder = newBuilder();
});
afterAll(() => {
  for (const r of repos) r.dispose();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(appsDir, { recursive: true, force: true });
});

function repoOf(files: Record<string, string>): LocalRepo {
  const r = localRepo(files);
  repos.push(r);
  return r;
}

async function settled(b: LocalReleaseBuilder, deploymentUuid: string, timeoutMs = 90_000): Promise<BuildStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await b.status(deploymentUuid);
    if (s.status !== 'building') return s;
    if (Date.now() > deadline) throw new Error(`build ${deploymentUuid} still building`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function logOf(deploymentUuid: string): string[] {
  return parseBuildLog(readFileSync(layout.buildLogFile(deploymentUuid), 'utf8')).map((e) => e.message);
}

/** Builds a repository's head; answers the deployment, its final status and the release. */
async function build(
  repo: LocalRepo,
  options: { appUuid?: string; source?: string; b?: LocalReleaseBuilder; context?: string } = {},
) {
  const appUuid = options.appUuid ?? randomUUID();
  const deploymentUuid = randomUUID();
  const b = options.b ?? builder;
  await b.start({
    appUuid,
    deploymentUuid,
    source: { repository: options.source ?? repo.dir, commitSha: repo.head(), context: options.context },
  });
  const status = await settled(b, deploymentUuid);
  const image = status.status === 'succeeded' ? parseReleaseImage(status.image) : null;
  const releaseDir = image ? layout.releaseDir(appUuid, image.releaseId) : null;
  return { appUuid, deploymentUuid, status, image, releaseDir, log: logOf(deploymentUuid) };
}

/** Processes whose command line contains `marker` (read from /proc). */
function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker)) pids.push(Number(name));
    } catch {
      // ended meanwhile
    }
  }
  return pids;
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

const alive = (pid: number) =>
  existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));

describe('local builder: detection and release', () => {
  it('a Procfile web: line wins for the command; the language install still runs; the tree has no .git', async () => {
    const repo = repoOf(appFixture('procfile-app'));
    const r = await build(repo);
    expect(r.status).toEqual({ status: 'succeeded', image: releaseImage(r.appUuid, r.image!.releaseId) });
    expect(r.image!.releaseId).toMatch(new RegExp(`^\\d{8}T\\d{6}-${repo.head().slice(0, 7)}$`));
    expect(await builder.manifest(r.appUuid, r.image!.releaseId)).toMatchObject({
      releaseId: r.image!.releaseId,
      appUuid: r.appUuid,
      commitSha: repo.head(),
      kind: 'process',
      stack: 'procfile',
      web: 'node main.js --port $PORT',
      staticRoot: null,
      path: ['node_modules/.bin'],
    });
    expect(existsSync(path.join(r.releaseDir!, 'main.js'))).toBe(true);
    expect(existsSync(path.join(r.releaseDir!, '.git'))).toBe(false);
    expect(r.log).toEqual(
      expect.arrayContaining([
        'Procfile: web: node main.js --port $PORT',
        '$ npm install',
        `release ${r.image!.releaseId} built`,
      ]),
    );
    expect(r.log.at(-1)).toBe(`release ${r.image!.releaseId} built`);
  });

  it("Node without dependencies: npm install, npm run build, command npm start; as root the release is the app uid's and closed to others", async () => {
    const repo = repoOf(appFixture('node-hello'));
    const r = await build(repo);
    expect(r.status.status).toBe('succeeded');
    expect(await builder.manifest(r.appUuid, r.image!.releaseId)).toMatchObject({
      kind: 'process',
      stack: 'node',
      web: 'npm start',
      path: ['node_modules/.bin'],
    });
    expect(r.log).toEqual(expect.arrayContaining(['$ npm install', '$ npm run build']));
    const stamp = path.join(r.releaseDir!, 'build-stamp.txt');
    expect(readFileSync(stamp, 'utf8')).toBe('built by npm run build\n');
    const mode = statSync(r.releaseDir!).mode;
    expect(mode & 0o077).toBe(0);
    if (isRoot) {
      // the build step itself ran as the app's uid: the file it wrote is the app's
      expect(statSync(stamp).uid).toBe(appUid(r.appUuid));
      expect(statSync(path.join(r.releaseDir!, 'server.js')).uid).toBe(appUid(r.appUuid));
      expect(statSync(r.releaseDir!).uid).toBe(appUid(r.appUuid));
      expect(existsSync(path.join(layout.homeDir(r.appUuid), '.npm'))).toBe(true);
    }
  });

  it("without a uid switch (Berth not root) the steps run as Berth's own user, the release still closed to others", async () => {
    const plain = new LocalReleaseBuilder({
      layout,
      isolation: { uidSwitch: false, cgroups: false, cgroupRoot: isolation.cgroupRoot, summary: 'test' },
      logger: captureLogger().logger,
      allowFileUrls: true,
    });
    const files = appFixture('node-hello');
    files['package.json'] = JSON.stringify({
      name: 'plain',
      version: '1.0.0',
      scripts: { build: 'echo "uid=$(id -u)"', start: 'node server.js' },
    });
    const r = await build(repoOf(files), { b: plain });
    expect(r.status.status).toBe('succeeded');
    expect(r.log).toContain(`uid=${process.getuid!()}`);
    expect(statSync(r.releaseDir!).uid).toBe(process.getuid!());
    expect(statSync(r.releaseDir!).mode & 0o077).toBe(0);
  });

  it('npm ci when a lock file exists', async () => {
    const files = appFixture('node-hello');
    files['package-lock.json'] = JSON.stringify({
      name: 'node-hello',
      version: '1.0.0',
      lockfileVersion: 3,
      requires: true,
      packages: { '': { name: 'node-hello', version: '1.0.0' } },
    });
    const r = await build(repoOf(files));
    expect(r.status.status).toBe('succeeded');
    expect(r.log).toContain('$ npm ci');
    expect(r.log).not.toContain('$ npm install');
  });

  it('Python with an empty requirements.txt: a virtualenv, pip install, command python app.py', async () => {
    const r = await build(repoOf(appFixture('python-hello')));
    expect(r.status.status).toBe('succeeded');
    expect(await builder.manifest(r.appUuid, r.image!.releaseId)).toMatchObject({
      kind: 'process',
      stack: 'python',
      web: 'python app.py',
      path: ['.venv/bin'],
    });
    expect(existsSync(path.join(r.releaseDir!, '.venv', 'bin', 'python'))).toBe(true);
    expect(r.log).toEqual(expect.arrayContaining(['$ python3 -m venv .venv']));
    expect(r.log.some((l) => l.includes('pip install') && l.includes('-r requirements.txt'))).toBe(true);
  });

  it('Python without Procfile, app.py or main.py fails with a reason telling to add a Procfile', async () => {
    const r = await build(repoOf({ 'requirements.txt': '', 'wsgi.py': 'app = None\n' }));
    expect(r.status.status).toBe('failed');
    expect((r.status as { reason: string }).reason).toMatch(/Procfile with a web: line/);
  });

  it('a static folder (public/index.html) is a static release the ingress serves', async () => {
    const r = await build(repoOf(appFixture('static-site')));
    expect(r.status.status).toBe('succeeded');
    expect(await builder.manifest(r.appUuid, r.image!.releaseId)).toMatchObject({
      kind: 'static',
      stack: 'static',
      web: null,
      staticRoot: 'public',
      path: [],
    });
    expect(readFileSync(path.join(r.releaseDir!, 'public', 'index.html'), 'utf8')).toContain('hello from static-site');
  });

  it('nothing detected: failed with a reason listing what is looked for; no release is left', async () => {
    const r = await build(repoOf({ 'README.md': '# nothing here\n' }));
    expect(r.status).toEqual({ status: 'failed', reason: NOTHING_DETECTED });
    expect(r.log.at(-1)).toBe(`build failed: ${NOTHING_DETECTED}`);
    expect(readdirSync(path.join(layout.appDir(r.appUuid), 'releases'))).toEqual([]);
  });

  it("symbolic links to the machine's files are never read nor taken for a static site", async () => {
    const repo = repoOf({ 'README.md': '# links only\n' });
    symlinkSync('/etc/passwd', path.join(repo.dir, 'package.json'));
    symlinkSync('/etc/passwd', path.join(repo.dir, 'Procfile'));
    symlinkSync('/etc', path.join(repo.dir, 'public'));
    repo.commit({});
    const r = await build(repo);
    expect(r.status).toEqual({ status: 'failed', reason: NOTHING_DETECTED });
    expect(r.log.join('\n')).not.toContain('root:');
  });

  it("a build context (a stack service's build: folder) makes the release of that folder alone; one outside the tree or through a link fails", async () => {
    const repo = repoOf({ 'index.html': '<p>root</p>', 'web/public/index.html': '<p>web</p>' });
    const r = await build(repo, { context: './web/' });
    expect(r.status.status).toBe('succeeded');
    expect(readdirSync(r.releaseDir!)).toEqual(['public']);
    expect(readFileSync(path.join(r.releaseDir!, 'public', 'index.html'), 'utf8')).toBe('<p>web</p>');
    expect(existsSync(path.join(r.releaseDir!, 'index.html'))).toBe(false);
    expect((await build(repo, { context: '../web' })).status).toEqual({
      status: 'failed',
      reason: 'the build context "../web" leads outside the repository',
    });
    symlinkSync('/etc', path.join(repo.dir, 'etc'));
    repo.commit({});
    const linked = await build(repo, { context: 'etc' });
    expect(linked.status).toEqual({
      status: 'failed',
      reason: `the build context "etc" is not a folder of commit ${repo.head()}`,
    });
  });

  it("build steps run as the app's uid inside the build's own cgroup", async () => {
    const files = appFixture('node-hello');
    files['package.json'] = JSON.stringify({
      name: 'who',
      version: '1.0.0',
      scripts: { build: 'echo "uid=$(id -u)"; cat /proc/self/cgroup', start: 'node server.js' },
    });
    const r = await build(repoOf(files));
    expect(r.status.status).toBe('succeeded');
    expect(r.log).toContain(`uid=${isRoot ? appUid(r.appUuid) : process.getuid!()}`);
    if (isolation.cgroups)
      expect(r.log).toEqual(
        expect.arrayContaining([expect.stringMatching(new RegExp(`memory:/berth/build-${r.deploymentUuid}$`))]),
      );
  });

  it('a process a build step leaves in the background (even in a session of its own) ends with the build', async () => {
    const marker = `daemon-${randomUUID().slice(0, 8)}`;
    const files = appFixture('node-hello');
    files['package.json'] = JSON.stringify({
      name: 'daemon',
      version: '1.0.0',
      scripts: {
        build: `setsid sh -c 'sleep 120; echo ${marker}' >/dev/null 2>&1 < /dev/null &`,
        start: 'node server.js',
      },
    });
    const r = await build(repoOf(files));
    expect(r.status.status).toBe('succeeded');
    if (isolation.cgroups) {
      expect(processesWith(marker)).toEqual([]);
      expect(existsSync(path.join(isolation.cgroupRoot, 'memory', 'berth', `build-${r.deploymentUuid}`))).toBe(false);
    }
  });

  it('a failing build step fails the build with how it ended, its output in the log', async () => {
    const files = appFixture('node-hello');
    files['package.json'] = JSON.stringify({
      name: 'x',
      version: '1.0.0',
      scripts: { build: 'echo broken-build-output >&2; exit 3', start: 'node server.js' },
    });
    const r = await build(repoOf(files));
    expect(r.status).toEqual({ status: 'failed', reason: 'npm run build exited with code 3' });
    expect(r.log).toContain('broken-build-output');
  });

  it('fetches exactly the commit asked for, over file:// when allowed, and refuses file:// otherwise', async () => {
    const repo = repoOf(appFixture('static-site'));
    const first = repo.head();
    repo.commit({ 'index.html': '<p>second</p>' });
    const appUuid = randomUUID();
    const deploymentUuid = randomUUID();
    await builder.start({ appUuid, deploymentUuid, source: { repository: repo.url, commitSha: first } });
    const s = await settled(builder, deploymentUuid);
    expect(s.status).toBe('succeeded');
    const release = layout.releaseDir(appUuid, parseReleaseImage((s as { image: string }).image)!.releaseId);
    expect(existsSync(path.join(release, 'index.html'))).toBe(false);
    expect(
      (await builder.manifest(appUuid, parseReleaseImage((s as { image: string }).image)!.releaseId))!.commitSha,
    ).toBe(first);

    const refused = await build(repo, { source: repo.url, b: newBuilder({ allowFileUrls: false }) });
    expect(refused.status.status).toBe('failed');
    expect((refused.status as { reason: string }).reason).toMatch(/only https repositories/);

    const missing = randomUUID();
    await builder.start({
      appUuid,
      deploymentUuid: missing,
      source: { repository: repo.dir, commitSha: 'f'.repeat(40) },
    });
    expect(await settled(builder, missing)).toEqual({
      status: 'failed',
      reason: `commit ${'f'.repeat(40)} is not in ${repo.dir}`,
    });
  });

  it('start is idempotent per deployment', async () => {
    const repo = repoOf(appFixture('static-site'));
    const appUuid = randomUUID();
    const deploymentUuid = randomUUID();
    await builder.start({ appUuid, deploymentUuid, source: { repository: repo.dir, commitSha: repo.head() } });
    await builder.start({ appUuid, deploymentUuid, source: { repository: repo.dir, commitSha: repo.head() } });
    await settled(builder, deploymentUuid);
    await builder.start({ appUuid, deploymentUuid, source: { repository: repo.dir, commitSha: repo.head() } });
    expect(await builder.status(deploymentUuid)).toMatchObject({ status: 'succeeded' });
    expect(readdirSync(path.join(layout.appDir(appUuid), 'releases')).filter((f) => !f.endsWith('.json'))).toHaveLength(
      1,
    );
    expect(logOf(deploymentUuid).filter((l) => l.startsWith('building commit'))).toHaveLength(1);
  });
});

describe('local builder: cancel, restart, copy', () => {
  it('cancel kills the whole process group of a build held by a slow step; the status reads cancelled', async () => {
    const marker = `slow-build-${randomUUID().slice(0, 8)}`;
    const files = appFixture('node-hello');
    files['package.json'] = JSON.stringify({
      name: 'slow',
      version: '1.0.0',
      scripts: { build: `sleep 30 && echo ${marker}`, start: 'node server.js' },
    });
    const repo = repoOf(files);
    const appUuid = randomUUID();
    const deploymentUuid = randomUUID();
    await builder.start({ appUuid, deploymentUuid, source: { repository: repo.dir, commitSha: repo.head() } });
    const deadline = Date.now() + 60_000;
    let shells: number[] = [];
    while ((shells = processesWith(marker)).length === 0) {
      if (Date.now() > deadline) throw new Error('the slow build step never started');
      await new Promise((r) => setTimeout(r, 100));
    }
    const held = [...shells, ...shells.flatMap(childrenOf)];
    expect(held.length).toBeGreaterThanOrEqual(2); // the script's shell and its sleep
    expect(await builder.status(deploymentUuid)).toEqual({ status: 'building' });
    await builder.cancel(deploymentUuid);
    expect(await builder.status(deploymentUuid)).toEqual({ status: 'cancelled' });
    expect(held.filter(alive)).toEqual([]);
    expect(processesWith(marker)).toEqual([]);
    expect(logOf(deploymentUuid).at(-1)).toBe('build cancelled');
    expect(readdirSync(path.join(layout.appDir(appUuid), 'releases'))).toEqual([]);
  });

  it('a build left building by a restart reads failed (interrupted) in a new builder', async () => {
    const deploymentUuid = randomUUID();
    const appUuid = randomUUID();
    writeBuildRecord(layout, {
      deploymentUuid,
      appUuid,
      commitSha: 'a'.repeat(40),
      status: 'building',
      releaseId: null,
      reason: null,
      startedAt: new Date().toISOString(),
      finishedAt: null,
    });
    const restarted = newBuilder();
    expect(await restarted.status(deploymentUuid)).toEqual({ status: 'failed', reason: INTERRUPTED });
    expect(await newBuilder().status(deploymentUuid)).toEqual({ status: 'failed', reason: INTERRUPTED });
    expect(logOf(deploymentUuid)).toEqual([`build failed: ${INTERRUPTED}`]);
  });

  it('a Berth process killed mid-build: a new builder reads failed (interrupted) and ends what the build left (processes, half-made release)', async () => {
    const marker = `orphan-build-${randomUUID().slice(0, 8)}`;
    const files = appFixture('node-hello');
    files['package.json'] = JSON.stringify({
      name: 'orphan',
      version: '1.0.0',
      scripts: { build: `sleep 60 && echo ${marker}`, start: 'node server.js' },
    });
    const repo = repoOf(files);
    const appUuid = randomUUID();
    const deploymentUuid = randomUUID();
    // node itself with tsx's loader (not the tsx launcher, whose child would outlive the kill)
    const berth = spawn(
      process.execPath,
      [
        '--require',
        require.resolve('tsx/cjs'),
        path.join(__dirname, '..', 'support', 'local-build-process.ts'),
        dataDir,
        appsDir,
        appUuid,
        deploymentUuid,
        repo.dir,
        repo.head(),
      ],
      { stdio: 'ignore' },
    );
    const exited = new Promise((r) => berth.on('exit', r));
    try {
      const deadline = Date.now() + 60_000;
      while (processesWith(marker).length === 0) {
        if (Date.now() > deadline) throw new Error('the build in the other process never reached its slow step');
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      berth.kill('SIGKILL');
      await exited;
    }
    expect(processesWith(marker).length).toBeGreaterThan(0); // the build outlived its Berth process
    expect(readdirSync(path.join(layout.appDir(appUuid), 'releases'))).toHaveLength(1);
    expect(await newBuilder().status(deploymentUuid)).toEqual({ status: 'failed', reason: INTERRUPTED });
    expect(processesWith(marker)).toEqual([]);
    expect(existsSync(path.join(isolation.cgroupRoot, 'memory', 'berth', `build-${deploymentUuid}`))).toBe(false);
    expect(readdirSync(path.join(layout.appDir(appUuid), 'releases'))).toEqual([]);
    expect(logOf(deploymentUuid)).toEqual(expect.arrayContaining(['$ npm run build', `build failed: ${INTERRUPTED}`]));
  });

  it('an unknown deployment has no build status', async () => {
    await expect(builder.status(randomUUID())).rejects.toThrow(/no build for deployment/);
  });

  it('copyRelease copies a release to another app, owned by it, with its virtualenv repointed', async () => {
    const r = await build(repoOf(appFixture('python-hello')));
    const target = randomUUID();
    const copiedId = await builder.copyRelease(r.appUuid, r.image!.releaseId, target);
    const copied = layout.releaseDir(target, copiedId);
    expect(await builder.manifest(target, copiedId)).toMatchObject({
      releaseId: copiedId,
      appUuid: target,
      stack: 'python',
      web: 'python app.py',
    });
    expect(readFileSync(path.join(copied, 'app.py'), 'utf8')).toContain('python-hello');
    const pip = readFileSync(path.join(copied, '.venv', 'bin', 'pip'), 'utf8');
    expect(pip.split('\n')[0]).toMatch(new RegExp(`^#!${path.join(copied, '.venv', 'bin', 'python')}3?$`));
    expect(execFileSync(path.join(copied, '.venv', 'bin', 'pip'), ['--version'], { encoding: 'utf8' })).toContain(
      path.join(copied, '.venv'),
    );
    expect(statSync(copied).mode & 0o077).toBe(0);
    if (isRoot) expect(statSync(path.join(copied, 'app.py')).uid).toBe(appUid(target));
  });
});

describe('local builder: private https repositories and limits', () => {
  it('a credential reaches the git host as a header, never the log or the build record; without it the fetch fails', async () => {
    const token = `tok-${randomUUID()}`;
    const root = mkdtempSync(path.join(tmpdir(), 'berth-git-root-'));
    const repo = repoOf(appFixture('static-site'));
    execFileSync('git', ['clone', '--quiet', '--bare', repo.dir, path.join(root, 'site.git')]);
    const git = await startPrivateGitServer(root, { username: 'deploy-bot', token });
    try {
      const b = new LocalReleaseBuilder({
        layout,
        isolation,
        logger: captureLogger().logger,
        allowFileUrls: false,
        gitCaFile: git.caFile,
      });
      const appUuid = randomUUID();
      const ok = randomUUID();
      await b.start({
        appUuid,
        deploymentUuid: ok,
        source: {
          repository: git.url('site.git'),
          commitSha: repo.head(),
          credential: { username: 'deploy-bot', token },
        },
      });
      expect(await settled(b, ok)).toMatchObject({ status: 'succeeded' });
      expect(git.seenAuthorizations).toContain(`Basic ${Buffer.from(`deploy-bot:${token}`).toString('base64')}`);
      const written = readFileSync(layout.buildLogFile(ok), 'utf8') + readFileSync(buildRecordFile(layout, ok), 'utf8');
      expect(written).not.toContain(token);
      expect(written).not.toContain(Buffer.from(`deploy-bot:${token}`).toString('base64'));

      const anonymous = randomUUID();
      await b.start({
        appUuid,
        deploymentUuid: anonymous,
        source: { repository: git.url('site.git'), commitSha: repo.head() },
      });
      expect(await settled(b, anonymous)).toMatchObject({
        status: 'failed',
        reason: expect.stringMatching(/git fetch exited with code \d+: .*Authentication failed/i),
      });
    } finally {
      await git.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('the registry logins a build is given never reach its log or record, even when a step prints them', async () => {
    const token = `regtok-${randomUUID()}`;
    const b64 = Buffer.from(`bot:${token}`).toString('base64');
    const files = appFixture('node-hello');
    files['package.json'] = JSON.stringify({
      name: 'leaky',
      version: '1.0.0',
      scripts: { build: `echo leaked ${token} ${b64}`, start: 'node server.js' },
    });
    const repo = repoOf(files);
    const deploymentUuid = randomUUID();
    await builder.start({
      appUuid: randomUUID(),
      deploymentUuid,
      source: {
        repository: repo.dir,
        commitSha: repo.head(),
        registryLogins: [{ server: 'ghcr.io', username: 'bot', token }],
      },
    });
    expect(await settled(builder, deploymentUuid)).toMatchObject({ status: 'succeeded' });
    expect(logOf(deploymentUuid)).toContain('leaked *** ***');
    const written =
      readFileSync(layout.buildLogFile(deploymentUuid), 'utf8') +
      readFileSync(buildRecordFile(layout, deploymentUuid), 'utf8');
    expect(written).not.toContain(token);
    expect(written).not.toContain(b64);
  });

  it('a build past its time limit is killed and fails with the reason', async () => {
    const marker = `endless-build-${randomUUID().slice(0, 8)}`;
    const files = appFixture('node-hello');
    files['package.json'] = JSON.stringify({
      name: 'endless',
      version: '1.0.0',
      scripts: { build: `sleep 60 && echo ${marker}`, start: 'node server.js' },
    });
    const b = new LocalReleaseBuilder({
      layout,
      isolation,
      logger: captureLogger().logger,
      allowFileUrls: true,
      timeoutMs: 4000,
    });
    const r = await build(repoOf(files), { b });
    expect(r.status).toEqual({ status: 'failed', reason: 'the build took longer than 4 seconds' });
    expect(processesWith(marker)).toEqual([]);
  });
});

describe('local builder: what it refuses', () => {
  it('registry images and Dockerfiles are built where podman runs (else the missing packages are the reason); git commits and local releases are not', () => {
    const noPodman = imageRuntimeRefusal((file) => file !== PODMAN, true);
    expect(noPodman).toMatch(/lacks Debian's podman package: install it as root/);
    expect(imageRuntimeRefusal(() => true, true)).toBeNull();
    expect(imageRuntimeRefusal(() => true, false)).toMatch(/as root/);
    expect(
      localBuildRefusal({ method: 'container_registry', image: 'nginx:1', commitSha: null }, 'auto', noPodman),
    ).toBe(noPodman);
    expect(
      localBuildRefusal({ method: 'container_registry', image: 'nginx:1', commitSha: null }, 'auto', null),
    ).toBeNull();
    // Dockerfiles are built with podman: refused with the same reason where it is missing
    expect(
      localBuildRefusal({ method: 'github', image: null, commitSha: 'a'.repeat(40) }, 'dockerfile', null),
    ).toBeNull();
    expect(
      localBuildRefusal({ method: 'github', image: null, commitSha: 'a'.repeat(40) }, 'dockerfile', noPodman),
    ).toBe(noPodman);
    expect(localBuildRefusal({ method: 'parent_image', image: 'nginx:1', commitSha: null }, 'auto', null)).toMatch(
      /runs no container images/,
    );
    expect(
      localBuildRefusal(
        { method: 'parent_image', image: releaseImage(randomUUID(), '20261123T190102-abcdef1'), commitSha: null },
        'auto',
        null,
      ),
    ).toBeNull();
    expect(localBuildRefusal({ method: 'git_push', image: null, commitSha: 'a'.repeat(40) }, 'auto', null)).toBeNull();
  });
});
