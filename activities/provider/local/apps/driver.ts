import type { AllowList } from '../../../../domain/webhook-destination';
import { readdir, rm } from 'node:fs/promises';
import { ApplicationFailure } from '@temporalio/common';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { SecretBox } from '../../../../domain/secret-box';
import { parseReleaseImage, releaseImage, type LocalLayout } from '../../../../platform/local-layout';
import type {
  AppRunSpec,
  AppRuntimeStatus,
  AppSpec,
  AppsDriver,
  BuildRequest,
  BuildStatus,
  PortSpec,
} from '../../../../platform/drivers/apps';
import type { JobRequest, JobRun } from '../../../../platform/drivers/data';
import { localBuildRefusal } from '../builds/refusal';
import { ensurePodmanConfig, podmanConfig } from '../images/config';
import { buildSpace } from '../images/build-space';
import { removeContainerParents } from '../images/cgroups';
import { removeAppContainers } from '../images/container-run';
import { pruneImageReleases, removeUnusedImages } from '../images/prune';
import { ImagePulls } from '../images/pulls';
import type { PlatformRegistry } from '../images/registry';
import { imageRuntimeRefusal } from '../images/runtime';
import type { AppEventSink, IngressRoutes, LocalBuilder } from '../contracts';
import { groupProcesses, removeLimits, type Isolation } from '../sandbox/isolation';
import { ensureAppVolume, VolumeCopies } from './clone';
import { emptyRuntime, type AppRuntime, type AppsContext } from './context';
import { ensureAppDir } from './dirs';
import { runCronJob } from './jobs';
import { AppLogWriter } from './log';
import { PublicPorts } from './public-ports';
import { Rollouts } from './rollout';
import { startServing } from './serving';
import { AppStateStore, type AppStateRow } from './state';
import { DEFAULT_TIMING, type ReleaseSupervisor, type SupervisorTiming } from './supervisor';

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
  /** The program that copies a clone's volume (default cp; tests give a slower one). */
  copyTool?: string;
  /** Why container images do not run here (default: imageRuntimeRefusal(), the missing packages); null: they do. */
  imagesRefusal?: string | null;
  /** The platform registry pulled images are pushed to (and run from); absent or null: none. */
  registry?: PlatformRegistry | null;
  /** Private or loopback ranges a tenant's registry may be at (the operator's BERTH_REGISTRY_ALLOW_CIDRS; absent: none). */
  registryAllow?: AllowList;
}

/**
 * The `local` apps driver: each app's release runs as supervised processes on this machine
 * (supervisor.ts, started through the sandbox launcher), the ingress is told where its ready
 * replicas are, public ports are TCP forwarders. Its parts: serving.ts (the release that
 * serves), rollout.ts, public-ports.ts, jobs.ts (cron runs), clone.ts (release and volume
 * copies). It runs what the control plane hands it (AppRunSpec) and keeps what must survive
 * a restart of Berth in local_apps (state.ts); `resume()` starts again what should run.
 */
export class LocalAppsDriver implements AppsDriver {
  private readonly ctx: AppsContext;
  private readonly store: AppStateStore;
  private readonly runtimes = new Map<string, AppRuntime>();
  private readonly rollouts: Rollouts;
  private readonly ports: PublicPorts;
  private readonly volumes: VolumeCopies;
  private readonly imagesRefusal: string | null;
  private readonly pulls: ImagePulls | null;

  constructor(private readonly deps: LocalAppsDriverDeps) {
    this.imagesRefusal = deps.imagesRefusal === undefined ? imageRuntimeRefusal() : deps.imagesRefusal;
    const podman = this.imagesRefusal ? null : podmanConfig(deps.layout);
    if (podman) ensurePodmanConfig(podman);
    this.store = new AppStateStore(deps.dataSource, deps.secretBox);
    this.ctx = {
      layout: deps.layout,
      isolation: deps.isolation,
      builder: deps.builder,
      ingress: deps.ingress,
      events: deps.events,
      logger: deps.logger,
      store: this.store,
      log: new AppLogWriter(deps.layout),
      timing: { ...DEFAULT_TIMING, ...deps.timing },
      runtime: (appUuid) => this.rt(appUuid),
      podman,
    };
    this.pulls = podman
      ? new ImagePulls({
          layout: deps.layout,
          isolation: deps.isolation,
          podman,
          store: this.store,
          registry: deps.registry ?? null,
          registryAllow: deps.registryAllow ?? [],
        })
      : null;
    if (podman) {
      const prune = { layout: deps.layout, isolation: deps.isolation, podman, registry: deps.registry ?? null };
      this.ctx.pruneImages = (appUuid) => {
        void (async () => {
          const row = await this.store.get(appUuid);
          const inUse = [row?.release_id, row?.pending_release_id].filter((r): r is string => Boolean(r));
          const pruned = await pruneImageReleases(prune, appUuid, inUse);
          if (pruned.length > 0) this.ctx.log.berth(appUuid, `pruned old image releases: ${pruned.join(', ')}`);
        })().catch((err: Error) =>
          deps.logger.error({ appUuid, err: err.message }, 'local apps driver: could not prune image releases'),
        );
      };
    }
    this.rollouts = new Rollouts(this.ctx);
    this.ports = new PublicPorts(this.ctx, deps.host);
    this.volumes = new VolumeCopies(this.ctx, deps.copyTool);
  }

  private rt(appUuid: string): AppRuntime {
    let r = this.runtimes.get(appUuid);
    if (!r) this.runtimes.set(appUuid, (r = emptyRuntime()));
    return r;
  }

  private async require(appUuid: string): Promise<AppStateRow> {
    const row = await this.store.get(appUuid);
    if (!row)
      throw ApplicationFailure.nonRetryable(`local data plane: app ${appUuid} is not provisioned`, 'LocalAppNotFound');
    return row;
  }

  /** Starts again what should run after a restart of Berth, with the run spec it last had: leftover processes go first. */
  async resume(): Promise<void> {
    for (const row of await this.store.all()) {
      await this.killLeftovers(row.app_uuid);
      const failed = (what: string) => (err: unknown) => {
        this.deps.logger.error(
          { appUuid: row.app_uuid, err: (err as Error).message },
          `local apps driver: could not ${what}`,
        );
      };
      const spec = this.store.open(row.run_sealed);
      if (spec) this.rt(row.app_uuid).webPort = spec.internalPort;
      if (row.desired === 'running' && !row.gave_up_at) {
        if (row.pending_release_id) this.rollouts.queue(row.app_uuid);
        else if (spec) await startServing(this.ctx, row.app_uuid, row, spec).catch(failed('start the app again'));
      }
      await this.ports.open(row.app_uuid, row.ports).catch(failed("open the app's public ports again"));
    }
  }

  /** Stops every replica and public port of this process (Berth shuts down; `resume` starts them again). */
  async close(): Promise<void> {
    await Promise.all([...this.runtimes.keys()].map((a) => this.halt(a, { ports: true })));
    await this.ctx.log.close();
  }

  /** The images the app's releases name. */
  private async imagesOf(appUuid: string): Promise<string[]> {
    const dir = `${this.deps.layout.appDir(appUuid)}/releases`;
    const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.json'));
    const images: string[] = [];
    for (const name of names) {
      const m = await this.deps.builder.manifest(appUuid, name.slice(0, -'.json'.length)).catch(() => null);
      if (m?.kind === 'image' && m.image) images.push(m.image);
    }
    return images;
  }

  /** Whether the app's release (or the one it rolls out) is an image. */
  private async runsImages(appUuid: string): Promise<boolean> {
    const row = await this.store.get(appUuid);
    for (const id of [row?.release_id, row?.pending_release_id])
      if (id && (await this.deps.builder.manifest(appUuid, id))?.kind === 'image') return true;
    return false;
  }

  /** Kills what is left in the app's cgroup and its containers (a previous Berth's replicas) and waits until it is empty (up to 2 s). */
  private async killLeftovers(appUuid: string): Promise<void> {
    if (this.ctx.podman && (await this.runsImages(appUuid)))
      await removeAppContainers(this.deps.isolation, this.ctx.podman, appUuid);
    for (let attempt = 0; attempt < 20; attempt++) {
      const pids = groupProcesses(this.deps.isolation, { kind: 'app', id: appUuid });
      if (pids.length === 0) return;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
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
    await ensureAppVolume(this.ctx, spec.appUuid);
    await this.store.create(spec.appUuid, Math.max(1, spec.replicas));
  }

  async start(appUuid: string, spec: AppRunSpec): Promise<void> {
    const row = await this.require(appUuid);
    const rt = this.rt(appUuid);
    const live = rt.serving && (rt.serving.phase === 'booting' || rt.serving.phase === 'up');
    if (row.desired === 'running' && !row.gave_up_at && (live || rt.staticRoot || rt.rolling)) return;
    const running = { desired: 'running', gave_up_at: null, run_sealed: this.store.seal(spec) } as const;
    await this.store.update(appUuid, running);
    await startServing(this.ctx, appUuid, { ...row, ...running }, spec);
  }

  async stop(appUuid: string): Promise<void> {
    await this.require(appUuid);
    await this.store.update(appUuid, { desired: 'stopped', pending_release_id: null, pending_run_sealed: null });
    await this.halt(appUuid);
  }

  async restart(appUuid: string, spec: AppRunSpec): Promise<void> {
    const row = await this.require(appUuid);
    await this.halt(appUuid);
    // a rollout under way starts over with the new spec; otherwise the serving release gets new processes
    if (row.pending_release_id) {
      await this.store.update(appUuid, {
        desired: 'running',
        gave_up_at: null,
        pending_run_sealed: this.store.seal(spec),
      });
      this.rollouts.queue(appUuid);
      return;
    }
    const running = { desired: 'running', gave_up_at: null, run_sealed: this.store.seal(spec) } as const;
    await this.store.update(appUuid, running);
    await startServing(this.ctx, appUuid, { ...row, ...running }, spec);
  }

  /** Restarts the app with `spec` when it is meant to run (a stopped or sleeping app takes its spec at its next start). */
  async restartIfRunning(appUuid: string, spec: AppRunSpec): Promise<boolean> {
    const row = await this.store.get(appUuid);
    if (!row || row.desired !== 'running' || row.gave_up_at) return false;
    await this.restart(appUuid, spec);
    return true;
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
    if (options.ports) await this.ports.open(appUuid, []);
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

  // --- builds ---

  async startBuild(request: BuildRequest): Promise<void> {
    const { appUuid, deploymentUuid } = request;
    await this.require(appUuid);
    if (await this.store.settledBuild(deploymentUuid)) return;
    const refusal =
      localBuildRefusal(request, request.builder, this.imagesRefusal) ??
      (request.method !== 'parent_image' && request.method !== 'container_registry' && !request.repository
        ? `the local driver cannot build a ${request.method} deployment without a repository`
        : null);
    if (refusal) {
      await this.store.settleBuild(deploymentUuid, appUuid, { reason: refusal });
      return;
    }
    if (request.method === 'container_registry') {
      if (!request.image) return this.store.settleBuild(deploymentUuid, appUuid, { reason: 'the app names no image' });
      this.pulls!.start({ appUuid, deploymentUuid, image: request.image, auth: request.registryAuth ?? null });
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
        dockerfile: request.builder === 'dockerfile' ? '' : null,
        registryLogins: request.builder === 'dockerfile' ? (request.registryLogins ?? null) : null,
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
    return this.pulls?.status(deploymentUuid) ?? this.deps.builder.status(deploymentUuid);
  }

  async cancelBuild(deploymentUuid: string): Promise<void> {
    if (await this.store.settledBuild(deploymentUuid)) return;
    if (this.pulls?.cancel(deploymentUuid)) return;
    await this.deps.builder.cancel(deploymentUuid);
  }

  // --- rollout ---

  async rollout(appUuid: string, image: string, spec: AppRunSpec): Promise<void> {
    await this.require(appUuid);
    const parsed = parseReleaseImage(image);
    if (!parsed)
      throw ApplicationFailure.nonRetryable(
        localBuildRefusal({ method: 'parent_image', image, commitSha: null }, null, this.imagesRefusal)!,
        'LocalImageRefused',
      );
    const releaseId =
      parsed.appUuid === appUuid
        ? parsed.releaseId
        : await this.deps.builder.copyRelease(parsed.appUuid, parsed.releaseId, appUuid);
    await this.rollouts.request(appUuid, releaseId, spec);
  }

  /**
   * Pulls a registry image (no login: a stack's `image:` service) and makes it a release of
   * the app; answers the release's image (`local-release:...`) for `rollout`. What it does
   * goes to the app's log.
   */
  async imageRelease(appUuid: string, image: string): Promise<string> {
    await this.require(appUuid);
    if (!this.pulls) throw ApplicationFailure.nonRetryable(this.imagesRefusal!, 'LocalImageRefused');
    const outcome = await this.pulls.release({ appUuid, image, auth: null }, (line) =>
      this.ctx.log.berth(appUuid, line),
    );
    if ('reason' in outcome) throw ApplicationFailure.nonRetryable(outcome.reason, 'LocalImagePullFailed');
    return outcome.image;
  }

  async currentImage(appUuid: string): Promise<string | null> {
    const row = await this.store.get(appUuid);
    return row?.release_id ? releaseImage(appUuid, row.release_id) : null;
  }

  // --- cron jobs ---

  runJob(input: JobRequest): Promise<JobRun> {
    return runCronJob(this.ctx, input, { timeLimitMs: this.deps.jobTimeLimitMs });
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
    await this.store.update(targetAppUuid, { release_id: copy, run_sealed: null });
  }

  async cloneVolume(sourceAppUuid: string, targetAppUuid: string): Promise<void> {
    await this.require(targetAppUuid);
    await this.volumes.clone(sourceAppUuid, targetAppUuid);
  }

  async dropVolume(appUuid: string): Promise<void> {
    await this.volumes.abandon(appUuid);
    await rm(this.deps.layout.volumeDir(appUuid), { recursive: true, force: true });
    if (await this.store.get(appUuid)) await ensureAppVolume(this.ctx, appUuid);
  }

  // --- public ports ---

  async applyPorts(appUuid: string, ports: PortSpec[]): Promise<void> {
    await this.require(appUuid);
    await this.store.update(appUuid, { ports });
    await this.ports.open(appUuid, ports);
  }

  // --- deletion ---

  async delete(appUuid: string): Promise<void> {
    await this.volumes.abandon(appUuid);
    await this.halt(appUuid, { ports: true });
    this.runtimes.delete(appUuid);
    this.deps.ingress.remove(appUuid);
    await this.killLeftovers(appUuid);
    await this.ctx.log.close(appUuid);
    const images = this.ctx.podman ? await this.imagesOf(appUuid) : [];
    await rm(this.deps.layout.appDir(appUuid), { recursive: true, force: true });
    // its Dockerfile builds' cache and storage
    await rm(buildSpace(this.deps.layout, appUuid).dir, { recursive: true, force: true });
    if (this.ctx.podman && images.length > 0)
      await removeUnusedImages(
        {
          layout: this.deps.layout,
          isolation: this.deps.isolation,
          podman: this.ctx.podman,
          registry: this.deps.registry ?? null,
        },
        images,
      ).catch((err: Error) =>
        this.deps.logger.error(
          { appUuid, err: err.message },
          "local apps driver: could not remove a deleted app's images",
        ),
      );
    await rm(this.deps.layout.volumeDir(appUuid), { recursive: true, force: true });
    for (const file of [this.deps.layout.appLogFile(appUuid), `${this.deps.layout.appLogFile(appUuid)}.1`])
      await rm(file, { force: true });
    removeLimits(this.deps.isolation, { kind: 'app', id: appUuid });
    removeContainerParents(this.deps.isolation, { kind: 'app', id: appUuid });
    await this.store.remove(appUuid);
  }
}
