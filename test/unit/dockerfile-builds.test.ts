import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LocalReleaseBuilder } from '../../activities/provider/local/builds/builder';
import { APP_ID_COUNT, appIdBase } from '../../activities/provider/local/images/id-range';
import { ensurePodmanConfig, podmanConfig } from '../../activities/provider/local/images/config';
import { detectIsolation } from '../../activities/provider/local/sandbox/isolation';
import type { BuildStatus } from '../../platform/drivers/apps';
import { parseBuildLog } from '../../platform/build-log';
import { localLayout, parseReleaseImage, type LocalLayout } from '../../platform/local-layout';
import { localRepo, type LocalRepo } from '../support/git';
import { addBusybox, busyboxDockerfile, imageTestsMissing } from '../support/images';
import { captureLogger } from '../support/stack';

/**
 * Issue 27, builder dockerfile on the local driver: the builder builds a commit's
 * Dockerfile with podman, the RUN steps as strangers' code (a user namespace of their own,
 * not the machine's root; their own processes), inside the build's memory limit (a build
 * that runs out of it fails with that reason), and cancel stops it. The image becomes a
 * release pinned to its digest.
 */
jest.setTimeout(180_000);

const missing = imageTestsMissing();
if (missing) console.warn(`Dockerfile build tests skipped: ${missing}`);
const describeBuilds = missing ? describe.skip : describe;

let dataDir: string;
let appsDir: string;
let layout: LocalLayout;
const repos: LocalRepo[] = [];
const isolation = detectIsolation();

function newBuilder(buildMemoryBytes?: number): LocalReleaseBuilder {
  const podman = podmanConfig(layout);
  ensurePodmanConfig(podman);
  return new LocalReleaseBuilder({
    layout,
    isolation,
    logger: captureLogger().logger,
    allowFileUrls: true,
    podman,
    buildMemoryBytes,
  });
}

beforeAll(() => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'berth-data-'));
  appsDir = mkdtempSync(path.join(tmpdir(), 'berth-apps-'));
  layout = localLayout({ dataDir, appsDir });
});
afterAll(() => {
  for (const r of repos) r.dispose();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(appsDir, { recursive: true, force: true });
});

/** A repository with busybox and a Dockerfile running `runs`. */
function dockerRepo(runs: string[], extra: Record<string, string> = {}): LocalRepo {
  const repo = localRepo({ 'www/index.html': 'built\n', ...extra });
  repos.push(repo);
  addBusybox(repo.dir);
  repo.commit({ Dockerfile: busyboxDockerfile(runs) });
  return repo;
}

async function settled(b: LocalReleaseBuilder, deploymentUuid: string): Promise<BuildStatus> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const s = await b.status(deploymentUuid);
    if (s.status !== 'building') return s;
    if (Date.now() > deadline) throw new Error(`build ${deploymentUuid} still building`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const logOf = (deploymentUuid: string): string[] =>
  parseBuildLog(readFileSync(layout.buildLogFile(deploymentUuid), 'utf8')).map((e) => e.message);

/** The build's cgroup folders left in any controller. */
const cgroupsLeft = (deploymentUuid: string): string[] =>
  readdirSync('/sys/fs/cgroup')
    .map((c) => path.join('/sys/fs/cgroup', c, 'berth', `build-${deploymentUuid}`))
    .filter((d) => existsSync(d));

async function build(repo: LocalRepo, b = newBuilder(), dockerfile = '') {
  const appUuid = randomUUID();
  const deploymentUuid = randomUUID();
  await b.start({ appUuid, deploymentUuid, source: { repository: repo.dir, commitSha: repo.head(), dockerfile } });
  const status = await settled(b, deploymentUuid);
  return { appUuid, deploymentUuid, status, log: logOf(deploymentUuid) };
}

describeBuilds('Dockerfile builds on the local driver (podman build)', () => {
  it("builds the commit's Dockerfile into a release pinned to its digest; RUN steps run in a user namespace of their own, not as the machine's root, and see only their own processes", async () => {
    const repo = dockerRepo([
      'echo "uid map: $(cat /proc/self/uid_map)"',
      'echo "processes: $(ls /proc | grep -c "^[0-9]")"',
      'mkdir /app && echo written > /app/file && cat /app/file',
    ]);
    const { appUuid, deploymentUuid, status, log } = await build(repo);
    expect([status.status, status.status === 'failed' ? log.slice(-15) : null]).toEqual(['succeeded', null]);
    const text = log.join('\n');
    expect(text).toContain('$ podman build --file Dockerfile .');
    expect(text).toMatch(/STEP 1\/\d+: FROM scratch/);
    // the RUN steps' root is BUILD_IDS on the host: never uid 0
    const map = /uid map: +(\d+) +(\d+) +(\d+)/.exec(text);
    expect(map?.slice(1).map(Number)).toEqual([0, appIdBase(appUuid), APP_ID_COUNT]);
    // a PID namespace of its own: the step's shell and its ls, not the machine's processes
    expect(Number(/processes: (\d+)/.exec(text)?.[1])).toBeLessThan(5);
    expect(text).toContain('written');
    const release = parseReleaseImage((status as { image: string }).image)!;
    const manifest = JSON.parse(readFileSync(layout.releaseManifest(appUuid, release.releaseId), 'utf8'));
    expect(manifest).toMatchObject({ kind: 'image', stack: 'dockerfile', commitSha: repo.head() });
    expect(manifest.image).toMatch(new RegExp(`^localhost/berth/${appUuid}@sha256:[0-9a-f]{64}$`));
    expect(text).toContain(`release ${release.releaseId} runs ${manifest.image}`);
    // the tree is in the image: the release folder is empty
    expect(readdirSync(layout.releaseDir(appUuid, release.releaseId))).toEqual([]);
    expect(cgroupsLeft(deploymentUuid)).toEqual([]);
  });

  it('a RUN step over the build memory limit is killed: the build fails saying it ran out of memory, and nothing of it is left', async () => {
    const repo = dockerRepo(['echo allocating && dd if=/dev/zero of=/dev/null bs=400M count=1 && echo survived']);
    const { deploymentUuid, status, log } = await build(repo, newBuilder(192 * 2 ** 20));
    expect(status).toEqual({
      status: 'failed',
      reason: 'the build ran out of memory (its limit is 192 MiB): the kernel killed a process of the build',
    });
    expect(log).toContain('allocating');
    expect(log).not.toContain('survived');
    expect(cgroupsLeft(deploymentUuid)).toEqual([]);
  });

  it('cancel stops a Dockerfile build held by a slow RUN step: its processes end, the status reads cancelled', async () => {
    const marker = `slow-${randomUUID().slice(0, 8)}`;
    const repo = dockerRepo([`echo ${marker} && sleep 300`]);
    const b = newBuilder();
    const appUuid = randomUUID();
    const deploymentUuid = randomUUID();
    await b.start({
      appUuid,
      deploymentUuid,
      source: { repository: repo.dir, commitSha: repo.head(), dockerfile: '' },
    });
    const deadline = Date.now() + 60_000;
    while (!logOf(deploymentUuid).includes(marker)) {
      if (Date.now() > deadline) throw new Error('the slow RUN step never started');
      await new Promise((r) => setTimeout(r, 100));
    }
    await b.cancel(deploymentUuid);
    expect(await b.status(deploymentUuid)).toEqual({ status: 'cancelled' });
    const sleeping = () =>
      readdirSync('/proc').filter((p) => {
        try {
          return /^\d+$/.test(p) && readFileSync(`/proc/${p}/cmdline`, 'utf8').startsWith('sleep\u0000300');
        } catch {
          return false;
        }
      });
    // killed: on a loaded machine a killed process can take a few seconds to be scheduled and exit
    for (let i = 0; i < 100 && sleeping().length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(sleeping()).toEqual([]);
    expect(cgroupsLeft(deploymentUuid)).toEqual([]);
    expect(readdirSync(path.join(layout.appDir(appUuid), 'releases'))).toEqual([]);
  });

  it('a commit without a Dockerfile, or naming one outside the tree, fails with the reason', async () => {
    const repo = localRepo({ 'index.html': 'x' });
    repos.push(repo);
    expect((await build(repo)).status).toEqual({
      status: 'failed',
      reason: 'no Dockerfile or Containerfile at the root of the commit (builder dockerfile)',
    });
    expect((await build(repo, newBuilder(), '../Dockerfile')).status).toEqual({
      status: 'failed',
      reason: 'the Dockerfile "../Dockerfile" is outside the build context',
    });
  });
});
