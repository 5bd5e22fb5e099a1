import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, chown, mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { ApplicationFailure } from '@temporalio/common';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { SecretBox } from '../../../../domain/secret-box';
import { appUid, parseReleaseImage, releaseImage, type LocalLayout } from '../../../../platform/local-layout';
import { effectiveEnvironment } from '../../../app-environment';
import type {
  AppRuntimeStatus,
  AppSpec,
  AppsDriver,
  BuildRequest,
  BuildStatus,
  PortSpec,
} from '../../../../platform/drivers/apps';
import type { JobRun } from '../../../../platform/drivers/data';
import { ensureAppDir } from './dirs';
import { localBuildRefusal } from '../builds/refusal';
import { AppLogWriter } from './log';
import { AppStateStore, type AppStateRow } from './state';
import type { AppEventSink, IngressRoutes, LocalBuilder, ReleaseManifest } from '../contracts';
import { probesFor } from './health-probe';
import { applyLimits, isolatedCommand, removeLimits, type Isolation } from '../sandbox/isolation';
import {
  DEFAULT_TIMING,
  ReleaseSupervisor,
  SYSTEM_PATH,
  type SupervisorHooks,
  type SupervisorTiming,
} from './supervisor';
import { runJobProcess } from './jobs';
import { TcpForwarder, type ForwardTarget } from './public-ports';
import { appMounts, volumeAccess } from './volumes';

const exec = promisify(execFile);

export interface LocalAppsDriverDeps {
  dataSource: DataSource;
  secretBox: SecretBox;
  layout: LocalLayout;
  isolation: Isolation;
  builder: LocalBuilder;
  ingress: IngressRoutes;
  events: AppEventSink;
  logger: Logger;
  /** The address public ports listen on. */
  host: string;
  /** Shorter thresholds for tests (defaults: DEFAULT_TIMING). */
  timing?: Partial<SupervisorTiming>;
  /** How long a cron run may take (default: JOB_TIME_LIMIT_MS). */
  jobTimeLimitMs?: number;
}

/** What runs for one app in this process. */
interface Runtime {
  /** The release that serves (processes), or the folder a static release serves. */
  serving: ReleaseSupervisor | null;
  staticRoot: string | null;
  /** A rollout's release booting beside the serving one. */
  rolling: ReleaseSupervisor | null;
  /** Public ports: external port -> its forwarder and the internal port it reaches. */
  forwarders: Map<number, { fwd: TcpForwarder; internal: number }>;
  webPort: number;
  next: number;
  /** Rollouts run one after the other (a newer one stops the booting one first). */
  rollouts: Promise<void>;
  /** What the last rollout call asked for (release and a digest of its environment): the same again is a retry. */
  lastRollout?: string;
  /** Counts queued rollouts: only the newest may take over the app (an older one still booting gives way). */
  rolloutGen: number;
}

/**
 * The `local` apps driver: each app's release runs as supervised processes on this
 * machine (supervisor.ts), the ingress is told where its ready replicas are, public ports
 * are TCP forwarders. What must survive a restart of Berth is in local_apps
 * (app-state.ts); `resume()` starts again what should run.
 */
export class LocalAppsDriver implements AppsDriver {
  private readonly store: AppStateStore;
  private readonly log: AppLogWriter;
  private readonly timing: SupervisorTiming;
  private readonly runtimes = new Map<string, Runtime>();

  constructor(private readonly deps: LocalAppsDriverDeps) {
    this.store = new AppStateStore(deps.dataSource, deps.secretBox);
    this.log = new AppLogWriter(deps.layout);
    this.timing = { ...DEFAULT_TIMING, ...deps.timing };
  }

  private rt(appUuid: string): Runtime {
    let r = this.runtimes.get(appUuid);
    if (!r) {
      r = {
        serving: null,
        staticRoot: null,
        rolling: null,
        forwarders: new Map(),
        webPort: 8080,
        next: 0,
        rollouts: Promise.resolve(),
        rolloutGen: 0,
      };
      this.runtimes.set(appUuid, r);
    }
    return r;
  }

  private async require(appUuid: string): Promise<AppStateRow> {
    const row = await this.store.get(appUuid);
    if (!row)
      throw ApplicationFailure.nonRetryable(`local data plane: app ${appUuid} is not provisioned`, 'LocalAppNotFound');
    return row;
  }

  /** Starts again what should run after a restart of Berth: leftover processes go first. */
  async resume(): Promise<void> {
    for (const row of await this.store.all()) {
      await this.killLeftovers(row.app_uuid);
      const failed = (what: string) => (err: unknown) => {
        this.deps.logger.error(
          { appUuid: row.app_uuid, err: (err as Error).message },
          `local apps driver: could not ${what}`,
        );
      };
      if (row.desired === 'running' && !row.gave_up_at) {
        if (row.pending_release_id) this.queueRollout(row.app_uuid);
        else await this.startServing(row.app_uuid, row).catch(failed('start the app again'));
      }
      this.rt(row.app_uuid).webPort = (await this.store.settings(row.app_uuid)).internalPort;
      await this.openPorts(row.app_uuid, row.ports).catch(failed("open the app's public ports again"));
    }
  }

  /** Stops every replica and public port of this process (Berth shuts down; `resume` starts them again). */
  async close(): Promise<void> {
    await Promise.all([...this.runtimes.keys()].map((a) => this.halt(a, { ports: true })));
    await this.log.close();
  }

  /** Kills what is left in the app's cgroup (a previous Berth's replicas) and waits until it is empty (up to 2 s). */
  private async killLeftovers(appUuid: string): Promise<void> {
    if (!this.deps.isolation.cgroups) return;
    const file = path.join(this.deps.isolation.cgroupRoot, 'memory', 'berth', appUuid, 'cgroup.procs');
    for (let attempt = 0; attempt < 20; attempt++) {
      const pids = (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean);
      if (pids.length === 0) return;
      for (const pid of pids) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // gone already
        }
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  // --- lifecycle ---

  async provision(spec: AppSpec): Promise<void> {
    await ensureAppDir(this.deps.layout, this.deps.isolation, spec.appUuid);
    await this.ensureVolume(spec.appUuid);
    await this.store.create(spec.appUuid, Math.max(1, spec.replicas));
  }

  async start(appUuid: string): Promise<void> {
    const row = await this.require(appUuid);
    const rt = this.rt(appUuid);
    const live = rt.serving && (rt.serving.phase === 'booting' || rt.serving.phase === 'up');
    if (row.desired === 'running' && !row.gave_up_at && (live || rt.staticRoot || rt.rolling)) return;
    await this.store.update(appUuid, { desired: 'running', gave_up_at: null });
    await this.startServing(appUuid, { ...row, desired: 'running', gave_up_at: null });
  }

  async stop(appUuid: string): Promise<void> {
    await this.require(appUuid);
    await this.store.update(appUuid, { desired: 'stopped', pending_release_id: null, pending_env_sealed: null });
    await this.halt(appUuid);
  }

  async restart(appUuid: string): Promise<void> {
    const row = await this.require(appUuid);
    await this.store.update(appUuid, { desired: 'running', gave_up_at: null });
    await this.halt(appUuid);
    // a rollout under way starts over; otherwise the serving release gets new processes
    if (row.pending_release_id) this.queueRollout(appUuid);
    else await this.startServing(appUuid, { ...row, desired: 'running', gave_up_at: null });
  }

  async scaleToZero(appUuid: string): Promise<void> {
    await this.require(appUuid);
    await this.store.update(appUuid, { desired: 'zero' });
    await this.halt(appUuid);
  }

  /** Stops the app's processes (no events) and takes it out of the ingress. */
  private async halt(appUuid: string, options: { ports?: boolean } = {}): Promise<void> {
    const rt = this.rt(appUuid);
    const sups = [rt.serving, rt.rolling].filter((s): s is ReleaseSupervisor => s !== null);
    rt.serving = null;
    rt.rolling = null;
    rt.staticRoot = null;
    this.deps.ingress.setBackends(appUuid, []);
    for (const s of sups) s.hooks = null;
    await Promise.all(sups.map((s) => s.stop()));
    if (options.ports) await this.openPorts(appUuid, []);
  }

  async status(appUuid: string): Promise<AppRuntimeStatus> {
    const row = await this.store.get(appUuid);
    if (!row) return 'absent';
    if (row.gave_up_at) return 'failed';
    if (row.desired === 'stopped') return 'stopped';
    if (row.desired === 'zero') return 'scaled_to_zero';
    if (row.desired === 'provisioned') return 'provisioned';
    const rt = this.rt(appUuid);
    if (rt.rolling || row.pending_release_id) return 'starting';
    if (rt.staticRoot) return 'running';
    if (rt.serving) return rt.serving.health();
    if (row.rollout_failure) return 'failed';
    // nothing deployed yet: nothing to run, nothing failing
    return row.release_id ? 'starting' : 'running';
  }

  /** Why the app's last rollout did not take over (null: it did, it still runs, or none ran). */
  async rolloutFailure(appUuid: string): Promise<string | null> {
    return (await this.store.get(appUuid))?.rollout_failure ?? null;
  }

  /** The repository a git_push app is pushed to (the build fetches from it). */
  pushRepository(appName: string): string {
    return this.deps.layout.gitRepo(appName);
  }

  // --- running a release ---

  private async runFor(
    appUuid: string,
    releaseId: string,
    manifest: ReleaseManifest,
    env: Record<string, string>,
    replicas: number,
  ) {
    const settings = await this.store.settings(appUuid);
    this.rt(appUuid).webPort = settings.internalPort;
    const ramBytes = settings.quota.ram_size ?? 512 * 2 ** 20;
    applyLimits(this.deps.isolation, appUuid, { memoryBytes: ramBytes, cpus: settings.quota.cpu_size ?? 1 });
    const releaseDir = this.deps.layout.releaseDir(appUuid, releaseId);
    const home = this.deps.layout.homeDir(appUuid);
    const pathDirs = manifest.path.map((p) => path.join(releaseDir, p));
    const volumes = await volumeAccess(
      this.deps.layout,
      this.deps.isolation,
      await appMounts(this.deps.dataSource, appUuid),
    );
    return {
      appUuid,
      releaseId,
      releaseDir,
      manifest,
      ramBytes,
      volumes,
      replicas: Math.max(1, settings.quota.replicas ?? replicas),
      probes: probesFor(settings.healthChecks, settings.internalPort),
      env: { ...env, ...volumes.env, PATH: [...pathDirs, env.PATH ?? SYSTEM_PATH].join(':'), HOME: home, TMPDIR: home },
    };
  }

  private hooksFor(appUuid: string, sup: ReleaseSupervisor): SupervisorHooks {
    const report = (what: string, fn: () => Promise<void>) => {
      fn().catch((err) =>
        this.deps.logger.warn({ appUuid, err: (err as Error).message }, `local apps driver: could not report ${what}`),
      );
    };
    const serving = () => this.rt(appUuid).serving === sup;
    return {
      backendsChanged: () => {
        if (serving()) this.deps.ingress.setBackends(appUuid, sup.backends());
      },
      crashLoop: (detail) =>
        report('a crash loop', async () => {
          await this.deps.events.health(appUuid, 'app_crash_loop', detail);
          await this.deps.events.liveStatus(appUuid, 'failed');
        }),
      unhealthy: (detail) =>
        report('an unhealthy replica', async () => {
          await this.deps.events.health(appUuid, 'app_unhealthy', detail);
          await this.deps.events.liveStatus(appUuid, 'problem');
        }),
      recovered: () => report('a recovery', () => this.deps.events.liveStatus(appUuid, 'running')),
      gaveUp: (detail) =>
        report('giving up', async () => {
          if (serving()) this.deps.ingress.setBackends(appUuid, []);
          await this.store.update(appUuid, { gave_up_at: 'now' });
          await this.deps.events.health(appUuid, 'app_stopped', detail);
        }),
    };
  }

  private async environment(appUuid: string, sealed: string | null): Promise<Record<string, string>> {
    // a clone's release has no rollout of its own yet: its variables as they are now
    return this.store.open(sealed) ?? effectiveEnvironment(this.deps.dataSource, this.deps.secretBox, appUuid);
  }

  /** Starts the app's current release (not a rollout: crashes are restarted and reported). */
  private async startServing(appUuid: string, row: AppStateRow): Promise<void> {
    const rt = this.rt(appUuid);
    if (!row.release_id) return;
    const manifest = await this.deps.builder.manifest(appUuid, row.release_id);
    if (!manifest)
      throw ApplicationFailure.nonRetryable(
        `release ${row.release_id} of app ${appUuid} is missing`,
        'LocalReleaseMissing',
      );
    if (manifest.kind === 'static') {
      rt.staticRoot = path.join(this.deps.layout.releaseDir(appUuid, row.release_id), manifest.staticRoot ?? '.');
      this.deps.ingress.setBackends(appUuid, [{ kind: 'static', root: rt.staticRoot }]);
      return;
    }
    const run = await this.runFor(
      appUuid,
      row.release_id,
      manifest,
      await this.environment(appUuid, row.env_sealed),
      row.replicas,
    );
    const sup = new ReleaseSupervisor(run, {
      isolation: this.deps.isolation,
      log: this.log,
      timing: this.timing,
      failFast: false,
    });
    sup.hooks = this.hooksFor(appUuid, sup);
    rt.serving = sup;
    await sup.start();
  }

  // --- builds ---

  async startBuild(request: BuildRequest): Promise<void> {
    const { appUuid, deploymentUuid } = request;
    await this.require(appUuid);
    if (await this.store.settledBuild(deploymentUuid)) return;
    const refusal =
      localBuildRefusal(request, await this.store.builder(appUuid)) ??
      (request.method !== 'parent_image' && !request.repository
        ? `the local driver cannot build a ${request.method} deployment without a repository`
        : null);
    if (refusal) {
      await this.store.settleBuild(deploymentUuid, appUuid, { reason: refusal });
      return;
    }
    if (request.method === 'parent_image') {
      const parent = parseReleaseImage(request.image!)!;
      const copy =
        parent.appUuid === appUuid
          ? parent.releaseId
          : await this.deps.builder.copyRelease(parent.appUuid, parent.releaseId, appUuid);
      await this.store.settleBuild(deploymentUuid, appUuid, { image: releaseImage(appUuid, copy) });
      return;
    }
    await this.deps.builder.start({
      appUuid,
      deploymentUuid,
      source: {
        repository: request.repository!,
        commitSha: request.commitSha!,
        credential: request.credential ?? null,
      },
    });
  }

  async buildStatus(deploymentUuid: string): Promise<BuildStatus> {
    const settled = await this.store.settledBuild(deploymentUuid);
    if (settled) {
      return settled.status === 'succeeded'
        ? { status: 'succeeded', image: settled.image! }
        : { status: 'failed', reason: settled.reason ?? 'build failed' };
    }
    return this.deps.builder.status(deploymentUuid);
  }

  async cancelBuild(deploymentUuid: string): Promise<void> {
    if (await this.store.settledBuild(deploymentUuid)) return;
    await this.deps.builder.cancel(deploymentUuid);
  }

  // --- rollout ---

  async rollout(appUuid: string, image: string, env: Record<string, string> = {}): Promise<void> {
    const row = await this.require(appUuid);
    const parsed = parseReleaseImage(image);
    if (!parsed)
      throw ApplicationFailure.nonRetryable(
        localBuildRefusal({ method: 'parent_image', image, commitSha: null }, null)!,
        'LocalImageRefused',
      );
    const releaseId =
      parsed.appUuid === appUuid
        ? parsed.releaseId
        : await this.deps.builder.copyRelease(parsed.appUuid, parsed.releaseId, appUuid);
    const rt = this.rt(appUuid);
    // a retry of this very call (same release, same environment) changes nothing; a new environment is a new rollout
    const asked = `${releaseId}:${createHash('sha256')
      .update(JSON.stringify(Object.entries(env).sort()))
      .digest('hex')}`;
    if (row.pending_release_id === releaseId && rt.rolling?.run.releaseId === releaseId && rt.lastRollout === asked)
      return;
    rt.lastRollout = asked;
    await this.store.update(appUuid, {
      desired: 'running',
      gave_up_at: null,
      rollout_failure: null,
      pending_release_id: releaseId,
      pending_env_sealed: this.store.seal(env),
    });
    this.queueRollout(appUuid);
  }

  /** Runs the app's pending rollout after the one under way, which it supersedes (stopped at once). */
  private queueRollout(appUuid: string): void {
    const rt = this.rt(appUuid);
    const superseded = rt.rolling;
    rt.rolling = null;
    if (superseded) void superseded.stop();
    const gen = ++rt.rolloutGen;
    rt.rollouts = rt.rollouts.then(() => this.performRollout(appUuid, gen));
  }

  /**
   * Boots the pending release beside the serving one; once every replica is ready the
   * ingress switches to it and the old release stops. A release that exits at boot or is
   * not ready by the deadline is stopped: the old one keeps serving, the reason is kept.
   */
  private async performRollout(appUuid: string, gen: number): Promise<void> {
    const rt = this.rt(appUuid);
    const superseded = () => gen !== rt.rolloutGen;
    if (superseded()) return; // a newer rollout is queued behind this one
    try {
      const row = await this.require(appUuid);
      const releaseId = row.pending_release_id;
      if (!releaseId) return;
      const manifest = await this.deps.builder.manifest(appUuid, releaseId);
      if (!manifest)
        return await this.failRollout(appUuid, releaseId, `release ${releaseId} is missing on this machine`);
      if (rt.rolling) {
        const superseded = rt.rolling;
        rt.rolling = null;
        await superseded.stop();
      }
      if (manifest.kind === 'static') {
        if (superseded()) return;
        const old = rt.serving;
        rt.serving = null;
        rt.staticRoot = path.join(this.deps.layout.releaseDir(appUuid, releaseId), manifest.staticRoot ?? '.');
        this.deps.ingress.setBackends(appUuid, [{ kind: 'static', root: rt.staticRoot }]);
        if (old) old.hooks = null;
        await old?.stop();
        return await this.commitRollout(appUuid, releaseId, row.pending_env_sealed);
      }
      const env = this.store.open(row.pending_env_sealed) ?? {};
      const run = await this.runFor(appUuid, releaseId, manifest, env, row.replicas);
      const sup = new ReleaseSupervisor(run, {
        isolation: this.deps.isolation,
        log: this.log,
        timing: this.timing,
        failFast: true,
      });
      rt.rolling = sup;
      await sup.start();
      const booted = await sup.booted;
      if (rt.rolling !== sup) return; // stopped or superseded meanwhile
      rt.rolling = null;
      if (superseded()) {
        // a newer rollout was asked for while this one read its release and booted: it takes over
        await sup.stop();
        return;
      }
      if (!booted.ok) return await this.failRollout(appUuid, releaseId, booted.reason);
      const old = rt.serving;
      sup.hooks = this.hooksFor(appUuid, sup);
      rt.serving = sup;
      rt.staticRoot = null;
      this.deps.ingress.setBackends(appUuid, sup.backends());
      if (old) old.hooks = null;
      await old?.stop();
      await this.commitRollout(appUuid, releaseId, row.pending_env_sealed);
      this.log.berth(appUuid, `release ${releaseId} serves the app`);
    } catch (err) {
      this.deps.logger.error({ appUuid, err: (err as Error).message }, 'local apps driver: rollout failed');
      await this.failRollout(appUuid, null, `the rollout failed: ${(err as Error).message}`).catch(() => {});
    }
  }

  private async commitRollout(appUuid: string, releaseId: string, envSealed: string | null): Promise<void> {
    await this.store.update(appUuid, {
      release_id: releaseId,
      env_sealed: envSealed,
      pending_release_id: null,
      pending_env_sealed: null,
      rollout_failure: null,
    });
  }

  private async failRollout(appUuid: string, releaseId: string | null, reason: string): Promise<void> {
    if (releaseId) this.log.berth(appUuid, `release ${releaseId} does not serve: ${reason}`);
    await this.store.update(appUuid, { pending_release_id: null, pending_env_sealed: null, rollout_failure: reason });
  }

  async currentImage(appUuid: string): Promise<string | null> {
    const row = await this.store.get(appUuid);
    return row?.release_id ? releaseImage(appUuid, row.release_id) : null;
  }

  // --- cron jobs ---

  /**
   * Runs a cron job's command (`sh -c`) in the app's current release directory with the
   * environment its replicas run with (the serving rollout's variables, the release's PATH
   * entries, HOME, its volumes), as the app's uid in its cgroups, within the time limit.
   */
  async runJob(input: { appUuid: string; command: string }): Promise<JobRun> {
    const row = await this.require(input.appUuid);
    if (!row.release_id) {
      throw ApplicationFailure.nonRetryable(
        `app ${input.appUuid} has no release yet: deploy it before its cron jobs can run`,
        'LocalNoRelease',
      );
    }
    const manifest = await this.deps.builder.manifest(input.appUuid, row.release_id);
    if (!manifest)
      throw ApplicationFailure.nonRetryable(
        `release ${row.release_id} of app ${input.appUuid} is missing on this machine`,
        'LocalReleaseMissing',
      );
    const run = await this.runFor(
      input.appUuid,
      row.release_id,
      manifest,
      await this.environment(input.appUuid, row.env_sealed),
      row.replicas,
    );
    const { binds, gids, umask } = run.volumes;
    const { argv, env } = isolatedCommand(
      this.deps.isolation,
      { group: input.appUuid, uid: appUid(input.appUuid), binds, extraGids: gids, umask },
      ['/bin/sh', '-c', input.command],
      run.env,
    );
    this.log.berth(input.appUuid, `cron job run started in release ${row.release_id}`);
    const result = await runJobProcess(argv, { cwd: run.releaseDir, env, timeLimitMs: this.deps.jobTimeLimitMs });
    this.log.berth(input.appUuid, `cron job run exited with code ${result.exitCode}`);
    return result;
  }

  // --- clone and volumes ---

  /**
   * The target gets a copy of the source's current release. `shared` copies too: a release
   * lives in its app's folder, which only that app's uid may enter.
   */
  async cloneImage(sourceAppUuid: string, targetAppUuid: string, _options: { shared: boolean }): Promise<void> {
    await this.require(targetAppUuid);
    const source = await this.store.get(sourceAppUuid);
    if (!source?.release_id) return;
    const copy = await this.deps.builder.copyRelease(sourceAppUuid, source.release_id, targetAppUuid);
    await this.store.update(targetAppUuid, { release_id: copy, env_sealed: null });
  }

  /** The app's volume: `layout.volumeDir(<app uuid>)`, 0700 owned by the app's uid. */
  private async ensureVolume(appUuid: string): Promise<string> {
    const dir = this.deps.layout.volumeDir(appUuid);
    await mkdir(dir, { recursive: true });
    if (this.deps.isolation.uidSwitch) await chown(dir, appUid(appUuid), appUid(appUuid));
    await chmod(dir, 0o700);
    return dir;
  }

  async cloneVolume(sourceAppUuid: string, targetAppUuid: string): Promise<void> {
    await this.require(targetAppUuid);
    const source = this.deps.layout.volumeDir(sourceAppUuid);
    await this.dropVolume(targetAppUuid);
    const target = await this.ensureVolume(targetAppUuid);
    await exec('cp', ['-a', `${source}/.`, target]).catch((err: NodeJS.ErrnoException & { stderr?: string }) => {
      if (!String(err.stderr ?? '').includes('No such file')) throw err;
    });
    if (this.deps.isolation.uidSwitch)
      await exec('chown', ['-R', `${appUid(targetAppUuid)}:${appUid(targetAppUuid)}`, target]);
  }

  async dropVolume(appUuid: string): Promise<void> {
    await rm(this.deps.layout.volumeDir(appUuid), { recursive: true, force: true });
    if (await this.store.get(appUuid)) await this.ensureVolume(appUuid);
  }

  // --- public ports ---

  async applyPorts(appUuid: string, ports: PortSpec[]): Promise<void> {
    await this.require(appUuid);
    this.rt(appUuid).webPort = (await this.store.settings(appUuid)).internalPort;
    await this.store.update(appUuid, { ports });
    await this.openPorts(appUuid, ports);
  }

  /** Where a public port's connection goes: the web port round-robin over ready replicas, another port to the loopback. */
  private target(appUuid: string, internalPort: number): ForwardTarget {
    const rt = this.rt(appUuid);
    if (internalPort !== rt.webPort) return { host: '127.0.0.1', port: internalPort };
    const backends = (rt.serving?.backends() ?? []).filter((b) => b.kind === 'process');
    if (backends.length === 0) return null;
    const b = backends[rt.next++ % backends.length]!;
    return b.kind === 'process' ? { host: b.host, port: b.port } : null;
  }

  private async openPorts(appUuid: string, ports: PortSpec[]): Promise<void> {
    const rt = this.rt(appUuid);
    const wanted = new Map(
      ports
        .filter((p) => p.externalPort !== null && p.protocol === 'tcp')
        .map((p) => [p.externalPort!, p.internalPort]),
    );
    for (const [external, { fwd, internal }] of rt.forwarders) {
      if (wanted.get(external) !== internal) {
        rt.forwarders.delete(external);
        await fwd.close();
      }
    }
    for (const [external, internal] of wanted) {
      if (rt.forwarders.has(external)) continue;
      const fwd = new TcpForwarder(this.deps.host, external, () => this.target(appUuid, internal));
      await fwd.listen();
      rt.forwarders.set(external, { fwd, internal });
    }
  }

  // --- deletion ---

  async delete(appUuid: string): Promise<void> {
    await this.halt(appUuid, { ports: true });
    this.runtimes.delete(appUuid);
    this.deps.ingress.remove(appUuid);
    await this.killLeftovers(appUuid);
    await this.log.close(appUuid);
    await rm(this.deps.layout.appDir(appUuid), { recursive: true, force: true });
    await rm(this.deps.layout.volumeDir(appUuid), { recursive: true, force: true });
    for (const file of [this.deps.layout.appLogFile(appUuid), `${this.deps.layout.appLogFile(appUuid)}.1`])
      await rm(file, { force: true });
    removeLimits(this.deps.isolation, appUuid);
    await this.store.remove(appUuid);
  }
}
