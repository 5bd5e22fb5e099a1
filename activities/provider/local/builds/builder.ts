import type { AllowList } from '../../../../domain/webhook-destination';
import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import { lstat, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { Logger } from 'pino';
import { buildLogLine } from '../../../../platform/build-log';
import { appUid, releaseImage, type LocalLayout } from '../../../../platform/local-layout';
import { gitEnv } from '../../../git';
import type { BuildStatus } from '../../../../platform/drivers/apps';
import { ensureAppDir } from '../apps/dirs';
import { detect, type BuildPlan } from './detect';
import { readBuildRecord, writeBuildRecord, type BuildRecord } from './record';
import {
  BUILD_MEMBER,
  BuildFailed,
  describeExit,
  killAll,
  killGroup,
  killLeftoverGroup,
  processStartTime,
  runStep,
  type StepResult,
} from './steps';
import type { BuildSource, LocalBuilder, ReleaseManifest } from '../contracts';
import { groupProcesses, removeLimits, type Isolation, type SandboxOwner } from '../sandbox/isolation';
import { SYSTEM_PATH, type Launched, type Workload } from '../sandbox/launcher';
import { copyReleaseTo } from './release-copy';
import { buildSpace, clearBuild } from '../images/build-space';
import type { PodmanConfig } from '../images/config';
import type { PlatformRegistry } from '../images/registry';
import { PODMAN } from '../images/runtime';
import { hasDockerfile } from './detect';
import { buildDockerfileRelease } from './dockerfile-build';
import { loginSecrets } from '../images/base-images';

export interface LocalBuilderOptions {
  layout: LocalLayout;
  isolation: Isolation;
  logger: Logger;
  /** file:// repositories may be built (tests, a single-machine setup); https always may. */
  allowFileUrls: boolean;
  gitCaFile?: string;
  /** The whole build's time limit (default 15 minutes). */
  timeoutMs?: number;
  /** Memory of the build's cgroup (default 2 GiB: the app's quota is not known here). */
  buildMemoryBytes?: number;
  /** Podman with Berth's configuration, where this machine runs images (Dockerfile builds); null: it does not. */
  podman?: PodmanConfig | null;
  /** The platform registry built images are pushed to (and run from); null: they run from podman's storage. */
  registry?: PlatformRegistry | null;
  /** Private or loopback ranges a tenant's registry may be at (the operator's BERTH_REGISTRY_ALLOW_CIDRS; absent: none). */
  registryAllow?: AllowList;
}

export const INTERRUPTED = 'the build was interrupted (Berth restarted); deploy again';
const DEFAULT_TIMEOUT_MS = 15 * 60_000;
const DEFAULT_BUILD_MEMORY = 2 * 1024 ** 3;

/** A build under way in this process. */
interface Running {
  record: BuildRecord;
  source: BuildSource;
  child: Launched | null;
  cancelled: boolean;
  timedOut: boolean;
  finished: Promise<void>;
}

/** `20261123T190102-<sha7>`: sortable by build time, readable. */
function newReleaseId(sha: string, at: Date): string {
  return `${at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, '')}-${sha.slice(0, 7)}`;
}

/** A build's sandbox: its own cgroup (the app's quota is not known here), as the app's uid. */
const buildOwner = (deploymentUuid: string): SandboxOwner => ({ kind: 'build', id: deploymentUuid });
const scratchRepo = (layout: LocalLayout, deploymentUuid: string) =>
  path.join(layout.privateRoot, 'builds', `${deploymentUuid}.git`);

function duration(ms: number): string {
  return ms >= 60_000 ? `${Math.round(ms / 60_000)} minutes` : `${Math.round(ms / 1000)} seconds`;
}

/** The repository as it may appear in a log: no userinfo in a URL. */
function shown(repository: string): string {
  return repository.replace(/^(https?:\/\/)[^@/]*@/, '$1');
}

/**
 * The `local` driver's builder: fetches one commit into a new release directory, detects
 * how it runs (build-detect.ts), runs the install and build steps as the app's uid in a
 * build cgroup, and writes the release manifest. Builds run in the background as child
 * processes of this process; the log and the state live under the private root.
 */
export class LocalReleaseBuilder implements LocalBuilder {
  private readonly running = new Map<string, Running>();

  constructor(private readonly options: LocalBuilderOptions) {}

  private get layout(): LocalLayout {
    return this.options.layout;
  }

  async start(input: { appUuid: string; deploymentUuid: string; source: BuildSource }): Promise<void> {
    const { deploymentUuid } = input;
    if (this.running.has(deploymentUuid) || readBuildRecord(this.layout, deploymentUuid)) return;
    const record: BuildRecord = {
      deploymentUuid,
      appUuid: input.appUuid,
      commitSha: input.source.commitSha,
      status: 'building',
      releaseId: null,
      reason: null,
      startedAt: new Date().toISOString(),
      finishedAt: null,
    };
    mkdirSync(path.dirname(this.layout.buildLogFile(deploymentUuid)), { recursive: true, mode: 0o700 });
    writeBuildRecord(this.layout, record);
    const build: Running = {
      record,
      source: input.source,
      child: null,
      cancelled: false,
      timedOut: false,
      finished: Promise.resolve(),
    };
    this.running.set(deploymentUuid, build);
    build.finished = this.run(build).finally(() => this.running.delete(deploymentUuid));
  }

  async status(deploymentUuid: string): Promise<BuildStatus> {
    const record = readBuildRecord(this.layout, deploymentUuid);
    if (!record)
      throw ApplicationFailure.nonRetryable(`local driver: no build for deployment ${deploymentUuid}`, 'LocalNotFound');
    if (record.status === 'building' && !this.running.has(deploymentUuid)) {
      await this.cleanUpInterrupted(record);
      this.finish(record, 'failed', INTERRUPTED);
    }
    switch (record.status) {
      case 'building':
        return { status: 'building' };
      case 'succeeded':
        return { status: 'succeeded', image: releaseImage(record.appUuid, record.releaseId!) };
      case 'cancelled':
        return { status: 'cancelled' };
      default:
        return { status: 'failed', reason: record.reason ?? 'the build failed' };
    }
  }

  async cancel(deploymentUuid: string): Promise<void> {
    const build = this.running.get(deploymentUuid);
    if (build) {
      if (build.record.status === 'building') {
        // the status reads cancelled at once; the log's last line waits for the build's
        // processes to be gone, so output they had buffered never lands after it
        build.cancelled = true;
        this.settle(build.record, 'cancelled', null);
        this.stopProcesses(build);
      }
      await build.finished;
      return;
    }
    const record = readBuildRecord(this.layout, deploymentUuid);
    if (record?.status === 'building') {
      await this.cleanUpInterrupted(record);
      this.finish(record, 'cancelled', null);
    }
  }

  /**
   * What a build a previous run of Berth left behind: its processes (its last step's
   * process group, if still the same process, and whatever its cgroup holds), its cgroup,
   * its half-made release and its scratch repository.
   */
  private async cleanUpInterrupted(record: BuildRecord): Promise<void> {
    const group = buildOwner(record.deploymentUuid);
    killLeftoverGroup(record.pid, record.pidStartTime);
    await this.dropGroup(group);
    if (record.releaseId)
      await rm(this.layout.releaseDir(record.appUuid, record.releaseId), { recursive: true, force: true });
    await rm(scratchRepo(this.layout, record.deploymentUuid), { recursive: true, force: true });
    await clearBuild(buildSpace(this.layout, record.appUuid), record.deploymentUuid);
  }

  async manifest(appUuid: string, releaseId: string): Promise<ReleaseManifest | null> {
    try {
      return JSON.parse(await readFile(this.layout.releaseManifest(appUuid, releaseId), 'utf8')) as ReleaseManifest;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async copyRelease(fromAppUuid: string, releaseId: string, toAppUuid: string): Promise<string> {
    const manifest = await this.manifest(fromAppUuid, releaseId);
    if (!manifest)
      throw ApplicationFailure.nonRetryable(
        `local driver: no release ${releaseId} of app ${fromAppUuid}`,
        'LocalNotFound',
      );
    await ensureAppDir(this.layout, this.options.isolation, toAppUuid);
    const newId = this.freeReleaseId(toAppUuid, manifest.commitSha ?? 'copy000', new Date());
    const from = this.layout.releaseDir(fromAppUuid, releaseId);
    const to = this.layout.releaseDir(toAppUuid, newId);
    await copyReleaseTo(from, to, this.options.isolation.uidSwitch ? appUid(toAppUuid) : null);
    const copied: ReleaseManifest = {
      ...manifest,
      releaseId: newId,
      appUuid: toAppUuid,
      builtAt: new Date().toISOString(),
    };
    await writeFile(this.layout.releaseManifest(toAppUuid, newId), JSON.stringify(copied, null, 2), { mode: 0o640 });
    return newId;
  }

  /** Kills the current step's process group and whatever else the build's cgroup holds. */
  private stopProcesses(build: Running): void {
    killGroup(build.child);
    killAll(groupProcesses(this.options.isolation, buildOwner(build.record.deploymentUuid)));
  }

  /**
   * Empties the build's cgroup (SIGKILL, then a wait for the processes to leave: on a loaded
   * machine a killed process can take seconds to be scheduled and exit) and removes it.
   */
  private async dropGroup(group: SandboxOwner): Promise<void> {
    const iso = this.options.isolation;
    for (let i = 0; i < 300; i++) {
      const left = groupProcesses(iso, group);
      if (left.length === 0 && removeLimits(iso, group)) return;
      killAll(left);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** `text` without the build's secrets (the git credential's, the registry logins'): each becomes ***. */
  private redact(build: Running, text: string): string {
    const { credential, registryLogins } = build.source;
    const secrets = [credential, ...(registryLogins ?? [])].flatMap((login) => (login ? loginSecrets(login) : []));
    return secrets.reduce((t, secret) => t.split(secret).join('***'), text);
  }

  /** Appends one timestamped line to the deployment's build log (a credential never reaches it). */
  private log(build: Running, text: string): void {
    const safe = this.redact(build, text);
    appendFileSync(this.layout.buildLogFile(build.record.deploymentUuid), buildLogLine(safe), { mode: 0o600 });
  }

  private finish(
    record: BuildRecord,
    status: BuildRecord['status'],
    reason: string | null,
    releaseId: string | null = null,
  ): void {
    this.settle(record, status, reason, releaseId);
    this.logOutcome(record);
  }

  /** Records how a build ended (what `status` answers). */
  private settle(
    record: BuildRecord,
    status: BuildRecord['status'],
    reason: string | null,
    releaseId: string | null = null,
  ): void {
    Object.assign(record, { status, reason, releaseId, finishedAt: new Date().toISOString() });
    writeBuildRecord(this.layout, record);
  }

  /** The build log's last line: how the build ended. */
  private logOutcome(record: BuildRecord): void {
    const { status, reason, releaseId } = record;
    const line =
      status === 'succeeded'
        ? `release ${releaseId} built`
        : status === 'cancelled'
          ? 'build cancelled'
          : `build failed: ${reason}`;
    appendFileSync(this.layout.buildLogFile(record.deploymentUuid), buildLogLine(line), { mode: 0o600 });
  }

  private freeReleaseId(appUuid: string, sha: string, at: Date): string {
    const base = newReleaseId(sha, at);
    let id = base;
    for (let n = 2; existsSync(this.layout.releaseDir(appUuid, id)); n++) id = `${base}-${n}`;
    return id;
  }

  private async run(build: Running): Promise<void> {
    const { record } = build;
    const timer = setTimeout(() => {
      build.timedOut = true;
      this.stopProcesses(build);
    }, this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    let releaseDir: string | null = null;
    const work = scratchRepo(this.layout, record.deploymentUuid);
    const group = buildOwner(record.deploymentUuid);
    // The outcome is recorded only once the build's processes and cgroup are gone, so whoever
    // reads a finished status never sees what the build left behind.
    let outcome: { status: 'succeeded' | 'failed'; reason: string | null; releaseId: string | null } | null = null;
    try {
      this.log(build, `building commit ${record.commitSha} of ${shown(build.source.repository)}`);
      await ensureAppDir(this.layout, this.options.isolation, record.appUuid);
      const releaseId = this.freeReleaseId(record.appUuid, record.commitSha, new Date());
      releaseDir = this.layout.releaseDir(record.appUuid, releaseId);
      record.releaseId = releaseId; // the release being made: a restart removes it
      writeBuildRecord(this.layout, record);
      await this.fetch(build, work, releaseDir);
      await this.narrow(build, releaseDir);
      const { dockerfile, dockerfileIfPresent } = build.source;
      if ((dockerfile !== undefined && dockerfile !== null) || (dockerfileIfPresent && hasDockerfile(releaseDir))) {
        await buildDockerfileRelease({
          layout: this.layout,
          isolation: this.options.isolation,
          podman: this.options.podman ?? null,
          registry: this.options.registry ?? null,
          registryAllow: this.options.registryAllow ?? [],
          memoryBytes: this.options.buildMemoryBytes ?? DEFAULT_BUILD_MEMORY,
          appUuid: record.appUuid,
          deploymentUuid: record.deploymentUuid,
          commitSha: record.commitSha,
          owner: group,
          releaseId,
          releaseDir,
          dockerfile: dockerfile ?? '',
          registryLogins: build.source.registryLogins ?? [],
          stopped: () => build.cancelled || build.timedOut,
          step: (step, what) => this.step(build, step, what),
          log: (text) => this.log(build, text),
        });
      } else {
        const detection = detect(releaseDir);
        for (const note of detection.notes) this.log(build, note);
        if ('reason' in detection) throw new BuildFailed(detection.reason);
        await this.fence(build, releaseDir);
        for (const step of detection.plan.steps) await this.userStep(build, group, releaseDir, step.argv);
        await this.writeManifest(record, releaseId, detection.plan);
      }
      if (build.cancelled) throw new BuildFailed('stopped');
      outcome = { status: 'succeeded', reason: null, releaseId };
    } catch (err) {
      if (build.cancelled) {
        // the status reads cancelled already
      } else {
        const reason = this.redact(
          build,
          build.timedOut
            ? `the build took longer than ${duration(this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS)}`
            : err instanceof BuildFailed
              ? err.message
              : `internal error: ${(err as Error).message}`,
        );
        if (!(err instanceof BuildFailed))
          this.options.logger.error({ err, deployment: record.deploymentUuid }, 'local build failed');
        outcome = { status: 'failed', reason, releaseId: null };
      }
      if (releaseDir) await rm(releaseDir, { recursive: true, force: true });
    } finally {
      clearTimeout(timer);
      this.stopProcesses(build); // what a step left running in the background ends with the build
      await this.dropGroup(group);
      await rm(work, { recursive: true, force: true });
    }
    if (build.cancelled) {
      // a cancel that came while the build was being cleaned up: the release it made goes too
      if (outcome?.releaseId)
        await rm(this.layout.releaseDir(record.appUuid, outcome.releaseId), { recursive: true, force: true });
      this.logOutcome(record);
      return;
    }
    if (outcome) this.finish(record, outcome.status, outcome.reason, outcome.releaseId);
    if (outcome?.status === 'succeeded')
      this.options.logger.info(
        { deployment: record.deploymentUuid, app: record.appUuid, releaseId: outcome.releaseId },
        'local build succeeded',
      );
  }

  /** Runs a step (Berth's own: git, chown; or the user's, sandboxed) or fails the build with how it ended. */
  private async step(build: Running, step: Workload, what = step.command.join(' ')): Promise<void> {
    const argv = step.command;
    if (build.cancelled || build.timedOut) throw new BuildFailed('stopped');
    let last = '';
    const log = (line: string) => {
      const safe = this.redact(build, line);
      if (safe.trim()) last = safe.trim();
      this.log(build, safe);
    };
    const onSpawn = (step: Launched) => {
      build.child = step;
      const { pid } = step.child;
      if (!pid || build.record.status !== 'building') return;
      Object.assign(build.record, { pid, pidStartTime: processStartTime(pid) });
      writeBuildRecord(this.layout, build.record);
    };
    const r: StepResult = await runStep(this.options.isolation, step, { log, onSpawn });
    build.child = null;
    // git's and podman's last word says why (not found, authentication failed, the failed step); a build tool's is in the log above
    // (podman in a build's user namespace runs under a wrapper: its step is named `podman ...`)
    const says = (argv[0] === 'git' || argv[0] === PODMAN || what.startsWith('podman ')) && last;
    if (r.code !== 0) throw new BuildFailed(describeExit([what], r) + (says ? `: ${last.slice(0, 300)}` : ''));
  }

  /** Fetches exactly the commit (shallow; every branch when the server refuses a commit by id) and checks its tree out, without .git. */
  private async fetch(build: Running, work: string, releaseDir: string): Promise<void> {
    const { repository, commitSha, credential } = build.source;
    if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(commitSha)) throw new BuildFailed(`not a commit id: ${commitSha}`);
    const local = path.isAbsolute(repository);
    if (
      !local &&
      !repository.startsWith('https://') &&
      !(repository.startsWith('file://') && this.options.allowFileUrls)
    ) {
      throw new BuildFailed(
        `cannot fetch ${shown(repository)}: only https repositories (and the app's own pushed repository) are built`,
      );
    }
    await rm(work, { recursive: true, force: true });
    await mkdir(work, { recursive: true, mode: 0o700 });
    const env = gitEnv({
      home: work,
      allowFile: local || this.options.allowFileUrls,
      caFile: this.options.gitCaFile,
      credential,
    });
    const git = (args: string[], what?: string) =>
      this.step(build, { sandbox: null, command: ['git', ...args], cwd: work, env }, what);
    await git(['init', '--quiet', '--bare', work]);
    this.log(build, `fetching ${commitSha}`);
    try {
      await git(['fetch', '--quiet', '--depth=1', '--no-tags', '--', repository, commitSha], 'git fetch');
    } catch (err) {
      if (build.cancelled || build.timedOut) throw err;
      this.log(build, 'the server gives no single commit: fetching its branches');
      await git(['fetch', '--quiet', '--no-tags', '--', repository, '+refs/heads/*:refs/heads/*'], 'git fetch');
    }
    try {
      await git(['cat-file', '-e', `${commitSha}^{commit}`]);
    } catch (err) {
      if (build.cancelled || build.timedOut) throw err;
      throw new BuildFailed(`commit ${commitSha} is not in ${shown(repository)}`);
    }
    await mkdir(releaseDir, { recursive: true });
    await git(
      ['--git-dir', work, '--work-tree', releaseDir, 'checkout', '--quiet', '--force', commitSha, '--', '.'],
      'git checkout',
    );
    this.log(build, `checked out ${commitSha}`);
  }

  /**
   * A build context (a stack service's `build:` folder): the release is that folder of the
   * checked-out tree alone. It must be a real folder inside the tree, no symbolic link on the way.
   */
  private async narrow(build: Running, releaseDir: string): Promise<void> {
    const context = build.source.context ?? '.';
    const rel = path.posix.normalize(context).replace(/\/+$/, '');
    if (rel === '.' || rel === '') return;
    if (path.posix.isAbsolute(rel) || rel.split('/').includes('..'))
      throw new BuildFailed(`the build context "${context}" leads outside the repository`);
    let at = releaseDir;
    for (const part of rel.split('/')) {
      at = path.join(at, part);
      const st = await lstat(at).catch(() => null);
      if (!st?.isDirectory())
        throw new BuildFailed(`the build context "${context}" is not a folder of commit ${build.record.commitSha}`);
    }
    const whole = `${releaseDir}.tree`;
    await rename(releaseDir, whole);
    await rename(path.join(whole, rel), releaseDir);
    await rm(whole, { recursive: true, force: true });
    this.log(build, `building the folder ${rel}`);
  }

  /** The release belongs to the app's uid (when Berth is root) and no one else may read it. */
  private async fence(build: Running, releaseDir: string): Promise<void> {
    const env = { PATH: SYSTEM_PATH };
    if (this.options.isolation.uidSwitch) {
      const uid = appUid(build.record.appUuid);
      await this.step(build, {
        sandbox: null,
        command: ['chown', '-R', `${uid}:${uid}`, releaseDir],
        cwd: releaseDir,
        env,
      });
    }
    await this.step(build, { sandbox: null, command: ['chmod', '-R', 'go-rwx', releaseDir], cwd: releaseDir, env });
  }

  /** A step that runs the user's code: as the app's uid, in the build cgroup, with a HOME of the app's own and nothing of Berth's environment. */
  private async userStep(build: Running, owner: SandboxOwner, releaseDir: string, argv: string[]): Promise<void> {
    const { appUuid } = build.record;
    const home = this.layout.homeDir(appUuid);
    const iso = this.options.isolation;
    // eslint-disable-next-line no-restricted-properties -- not configuration: without a uid switch, tools are found on Berth's own PATH
    const basePath = iso.uidSwitch ? SYSTEM_PATH : (process.env.PATH ?? SYSTEM_PATH);
    const env: Record<string, string> = {
      PATH: `${path.join(releaseDir, 'node_modules/.bin')}:${basePath}`,
      HOME: home,
      TMPDIR: home,
      LANG: 'C.UTF-8',
      CI: 'true',
      npm_config_cache: path.join(home, '.npm'),
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      npm_config_audit: 'false',
      PIP_CACHE_DIR: path.join(home, '.cache', 'pip'),
      PIP_DISABLE_PIP_VERSION_CHECK: '1',
    };
    this.log(build, `$ ${argv.join(' ')}`);
    const limits = { memoryBytes: this.options.buildMemoryBytes ?? DEFAULT_BUILD_MEMORY, cpus: 2 };
    await this.step(build, {
      sandbox: {
        owner,
        uid: appUid(appUuid),
        limits,
        view: { writable: [releaseDir, home], cwd: releaseDir },
      },
      network: { name: `build-${build.record.deploymentUuid}`, member: BUILD_MEMBER, ephemeral: true },
      command: argv,
      cwd: releaseDir,
      env,
    });
  }

  private async writeManifest(record: BuildRecord, releaseId: string, plan: BuildPlan): Promise<void> {
    const manifest: ReleaseManifest = {
      releaseId,
      appUuid: record.appUuid,
      commitSha: record.commitSha,
      kind: plan.kind,
      stack: plan.stack,
      web: plan.web,
      staticRoot: plan.staticRoot,
      path: plan.path,
      builtAt: new Date().toISOString(),
    };
    await writeFile(this.layout.releaseManifest(record.appUuid, releaseId), JSON.stringify(manifest, null, 2), {
      mode: 0o640,
    });
  }
}

export function createLocalBuilder(options: LocalBuilderOptions): LocalBuilder {
  return new LocalReleaseBuilder(options);
}
