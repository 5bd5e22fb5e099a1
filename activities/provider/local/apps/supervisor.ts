import type { ChildProcess } from 'node:child_process';
import { appUid } from '../../../../platform/local-layout';
import type { AppLogWriter } from './log';
import type { Backend, ReleaseManifest } from '../contracts';
import { probeOnce, type Probe } from './health-probe';
import { oomKills, type Isolation, type Limits, type SandboxView } from '../sandbox/isolation';
import { launch, releaseNetwork, type Address, type Launched, type Workload } from '../sandbox/launcher';
import type { NetworkMember } from '../network/fabric';
import type { AppVpcAttachment } from '../../../../platform/drivers/apps';
import type { VolumeAccess } from './volumes';

/** The supervisor's thresholds (docs/decisions.md "Local apps driver"); tests shorten them. */
export interface SupervisorTiming {
  /** First restart delay after a crash; doubles per crash in a row up to `backoffMaxMs`. */
  backoffInitialMs: number;
  backoffMaxMs: number;
  /** `crashLoopCount` crashes within `crashWindowMs`: app_crash_loop (once) and live status failed. */
  crashWindowMs: number;
  crashLoopCount: number;
  /** A replica that crashed this many times in a row without a healthy period is not restarted: app_stopped. */
  giveUpAfter: number;
  /** How long a replica must stay ready for its crash count to start again from zero. */
  healthyPeriodMs: number;
  /** How long a release may take until every replica is ready. */
  bootDeadlineMs: number;
  /** How long a stopped replica gets between SIGTERM and SIGKILL. */
  stopGraceMs: number;
}

export const DEFAULT_TIMING: SupervisorTiming = {
  backoffInitialMs: 1000,
  backoffMaxMs: 30_000,
  crashWindowMs: 60_000,
  crashLoopCount: 3,
  giveUpAfter: 5,
  healthyPeriodMs: 10_000,
  bootDeadlineMs: 60_000,
  stopGraceMs: 5000,
};

/** One release of an app run as `replicas` processes. */
export interface ReleaseRun {
  appUuid: string;
  releaseId: string;
  releaseDir: string;
  manifest: ReleaseManifest;
  /** The whole environment of a replica but PORT (the rollout's variables, PATH, HOME, TMPDIR). */
  env: Record<string, string>;
  replicas: number;
  probes: Probe[];
  /** The app's cgroup limits (its quota), applied at each replica's start. */
  limits: Limits;
  /** What a replica sees of the machine: its release and home writable, the system read-only. */
  view: SandboxView;
  /** The storage volumes the app mounts (bind mounts, their groups, the umask). */
  volumes: VolumeAccess;
  /** The port the web process listens on in its own network (the app's internal port). */
  port: number;
  /** What the workload network knows of each replica (its workspace, name, add-ons). */
  member: NetworkMember;
  /** The VPC subnets each replica is plugged into as well. */
  vpcs: AppVpcAttachment[];
  /** An image release: each replica start is a container (images/replicas.ts) instead of `sh -c <web>`. */
  container?: ContainerReplicas;
}

/** How the replicas of an image release are started and removed. */
export interface ContainerReplicas {
  /** One start of replica `index`: the launcher's workload (a `podman run`) and how to remove its container. */
  replica(index: number): { workload: Workload; remove(): void };
  /** Whether a container that ended killed (137) ran out of the app's memory (asked once per such end). */
  outOfMemory(): boolean;
}

/** What the supervisor reports to the driver (events only for the release that serves). */
export interface SupervisorHooks {
  backendsChanged(): void;
  crashLoop(detail: string): void;
  unhealthy(detail: string): void;
  recovered(): void;
  gaveUp(detail: string): void;
}

export type BootResult = { ok: true } | { ok: false; reason: string };

interface Replica {
  index: number;
  /** Where the current process is reached (the launcher's; null until it started). */
  address: Address | null;
  gen: number;
  child: ChildProcess | null;
  /** How the current process is signalled (with its sandbox). */
  launched: Launched | null;
  ready: boolean;
  /** Liveness counts only once the replica was ready (a slow boot is the boot deadline's business). */
  wasReady: boolean;
  startupPassed: boolean;
  failures: Map<Probe, number>;
  lastStderr: string | null;
  killedFor: string | null;
  consecutive: number;
  timers: NodeJS.Timeout[];
  exited: Promise<void> | null;
}

/** What a replica knows of its current process: nothing yet, at each start. */
function freshRun(): Pick<Replica, 'ready' | 'wasReady' | 'startupPassed' | 'failures' | 'lastStderr' | 'killedFor'> {
  return {
    ready: false,
    wasReady: false,
    startupPassed: false,
    failures: new Map(),
    lastStderr: null,
    killedFor: null,
  };
}

const seconds = (ms: number) => `${Number((ms / 1000).toFixed(1))} s`;

/**
 * Runs one release's replicas: `sh -c <web>` in the release directory, each started by the
 * launcher in the app's sandbox at an address (and PORT) of its own, output to the app log; probes them (health
 * checks, else the port accepting connections); restarts one that exits or fails liveness
 * with backoff; reports crash loops, unhealthy replicas and giving up through the hooks.
 *
 * `failFast` (a rollout): until every replica is ready once, an exit or the deadline fails
 * the boot instead (the old release keeps serving).
 */
export class ReleaseSupervisor {
  phase: 'booting' | 'up' | 'boot_failed' | 'gave_up' | 'stopped' = 'booting';
  private readonly replicas: Replica[] = [];
  private crashTimes: number[] = [];
  private crashLoopReported = false;
  private unhealthyReported = false;
  private stopping = false;
  private oomSeen: number;
  private bootTimer: NodeJS.Timeout | null = null;
  private settleBoot!: (r: BootResult) => void;
  /** Settles once: every replica ready, or the boot failed (failFast) or the supervisor gave up. */
  readonly booted: Promise<BootResult>;
  /** Reports go to the hooks only while this is set (the release serving). */
  hooks: SupervisorHooks | null = null;

  constructor(
    readonly run: ReleaseRun,
    private readonly deps: { isolation: Isolation; log: AppLogWriter; timing: SupervisorTiming; failFast: boolean },
  ) {
    this.oomSeen = oomKills(deps.isolation, { kind: 'app', id: run.appUuid });
    this.booted = new Promise((resolve) => {
      this.settleBoot = resolve;
    });
  }

  private get app() {
    return this.run.appUuid;
  }

  async start(): Promise<void> {
    for (let i = 1; i <= this.run.replicas; i++) {
      this.replicas.push({
        index: i,
        address: null,
        gen: 0,
        child: null,
        launched: null,
        ...freshRun(),
        consecutive: 0,
        timers: [],
        exited: null,
      });
    }
    this.deps.log.berth(
      this.app,
      `starting release ${this.run.releaseId} (${this.run.replicas} replica${this.run.replicas === 1 ? '' : 's'})`,
    );
    for (const r of this.replicas) await this.startReplica(r);
    this.bootTimer = setTimeout(() => this.bootDeadline(), this.bootDeadlineMs());
  }

  private bootDeadlineMs(): number {
    const startup = this.run.probes.find((p) => p.kind === 'startup');
    const window = startup ? startup.initialDelayMs + startup.periodMs * startup.failureThreshold : 0;
    return Math.max(this.deps.timing.bootDeadlineMs, window);
  }

  private bootDeadline(): void {
    if (this.phase !== 'booting') return;
    const stderr = this.replicas.map((r) => r.lastStderr).find((l) => l);
    const reason = `the release did not become healthy within ${seconds(this.bootDeadlineMs())}${stderr ? `: ${stderr}` : ''}`;
    if (this.deps.failFast) {
      this.failBoot(reason);
    } else {
      this.phase = 'up';
      this.settleBoot({ ok: false, reason });
      this.unhealthy(reason);
    }
  }

  private failBoot(reason: string): void {
    this.phase = 'boot_failed';
    this.deps.log.berth(this.app, `release ${this.run.releaseId} failed to start: ${reason}`);
    this.settleBoot({ ok: false, reason });
    void this.stop('boot_failed');
  }

  /** The replicas ready to take traffic. */
  backends(): Backend[] {
    return this.replicas
      .filter((r) => r.ready && r.address)
      .map((r) => ({ kind: 'process', host: r.address!.host, port: r.address!.port }));
  }

  pids(): number[] {
    return this.replicas.map((r) => r.child?.pid).filter((p): p is number => typeof p === 'number');
  }

  /** The live status this release gives the app. */
  health(): 'starting' | 'running' | 'problem' | 'failed' {
    if (this.crashLoopReported || this.phase === 'boot_failed' || this.phase === 'gave_up' || this.phase === 'stopped')
      return 'failed';
    if (this.phase === 'booting') return 'starting';
    return this.replicas.every((r) => r.ready) ? 'running' : 'problem';
  }

  private async startReplica(r: Replica): Promise<void> {
    if (this.stopping) return;
    const gen = ++r.gen;
    const source = `web.${r.index}`;
    const { binds, gids, umask } = this.run.volumes;
    const container = this.run.container?.replica(r.index);
    const network = { name: this.networkName(r), member: this.run.member, vpcs: this.run.vpcs };
    const started = await launch(
      this.deps.isolation,
      container
        ? { ...container.workload, network, port: this.run.port }
        : {
            sandbox: {
              owner: { kind: 'app', id: this.app },
              uid: appUid(this.app),
              limits: this.run.limits,
              view: this.run.view,
              binds,
              extraGids: gids,
              umask,
            },
            network,
            command: ['/bin/sh', '-c', this.run.manifest.web ?? 'false'],
            cwd: this.run.releaseDir,
            env: this.run.env,
            listens: true,
            port: this.run.port,
          },
    );
    // a container outlives a SIGKILL of its `podman run`: it is removed as well
    const launched: Launched = container
      ? {
          ...started,
          kill: (signal) => {
            started.kill(signal);
            if (signal === 'SIGKILL') container.remove();
          },
        }
      : started;
    const { child, address } = launched;
    if (this.stopping || r.gen !== gen) {
      launched.kill('SIGKILL'); // stopped while it was being started
      return;
    }
    r.address = address;
    Object.assign(r, { child, launched, ...freshRun() });
    this.deps.log.pipe(this.app, source, child.stdout!);
    this.deps.log.pipe(this.app, source, child.stderr!, (line) => {
      r.lastStderr = line.trim();
    });
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    r.exited = new Promise<void>((resolve) => {
      let handled = false;
      const onEnd = (code: number | null, signal: NodeJS.Signals | null) => {
        if (handled) return;
        handled = true;
        // let the last stderr lines arrive (they make the reason), but not forever
        void Promise.race([closed, new Promise((t) => setTimeout(t, 300))]).then(() => {
          this.onExit(r, gen, code, signal);
          resolve();
        });
      };
      child.once('exit', onEnd);
      child.once('error', (err) => {
        r.lastStderr = err.message;
        onEnd(127, null);
      });
    });
    this.deps.log.berth(this.app, `${source} started (pid ${child.pid ?? '?'}, port ${address!.port})`);
    for (const probe of this.run.probes) this.scheduleProbe(r, gen, probe);
  }

  /** A replica's namespace: kept across its restarts (same address), removed when the release stops. */
  private networkName(r: Replica): string {
    return `app-${this.app}-${this.run.releaseId}-${r.index}`;
  }

  private scheduleProbe(r: Replica, gen: number, probe: Probe): void {
    const hasStartup = this.run.probes.some((p) => p.kind === 'startup');
    const tick = async () => {
      if (r.gen !== gen || !r.child || this.stopping) return;
      let next = probe.periodMs;
      if ((probe.kind !== 'startup' && hasStartup && !r.startupPassed) || (probe.kind === 'liveness' && !r.wasReady)) {
        next = 250;
      } else {
        const ok = await probeOnce(probe, r.address!);
        if (r.gen !== gen || !r.child || this.stopping) return;
        this.onProbe(r, gen, probe, ok);
        // until a replica is first ready, look often: a rollout waits on it
        const waiting = (probe.kind === 'readiness' && !r.ready) || (probe.kind === 'startup' && !r.startupPassed);
        if (waiting && (r.failures.get(probe) ?? 0) < probe.failureThreshold) next = Math.min(next, 250);
      }
      r.timers.push(setTimeout(() => void tick(), next));
    };
    r.timers.push(setTimeout(() => void tick(), probe.initialDelayMs));
  }

  private onProbe(r: Replica, gen: number, probe: Probe, ok: boolean): void {
    const failures = ok ? 0 : (r.failures.get(probe) ?? 0) + 1;
    r.failures.set(probe, failures);
    if (probe.kind === 'startup') {
      if (ok) r.startupPassed = true;
      else if (!r.startupPassed && failures >= probe.failureThreshold)
        this.killReplica(r, `failed its startup check ${failures} times`);
    } else if (probe.kind === 'liveness') {
      if (failures >= probe.failureThreshold) this.killReplica(r, `failed its liveness check ${failures} times`);
    } else if (ok && !r.ready) {
      r.ready = true;
      r.wasReady = true;
      this.onReady(r, gen);
    } else if (!ok && r.ready && failures >= probe.failureThreshold) {
      r.ready = false;
      this.deps.log.berth(this.app, `web.${r.index} failed its readiness check ${failures} times: out of rotation`);
      this.hooks?.backendsChanged();
      if (this.phase === 'up') this.unhealthy(`web.${r.index} failed its readiness check ${failures} times`);
    }
  }

  private onReady(r: Replica, gen: number): void {
    this.hooks?.backendsChanged();
    const all = this.replicas.every((x) => x.ready);
    if (this.phase === 'booting' && all) {
      this.phase = 'up';
      if (this.bootTimer) clearTimeout(this.bootTimer);
      this.deps.log.berth(this.app, `release ${this.run.releaseId} is healthy`);
      this.settleBoot({ ok: true });
    }
    if (all && this.unhealthyReported && !this.crashLoopReported) {
      this.unhealthyReported = false;
      this.hooks?.recovered();
    }
    // a replica that stays ready a while starts its crash count again
    r.timers.push(
      setTimeout(() => {
        if (r.gen !== gen || !r.ready) return;
        r.consecutive = 0;
        if (this.crashLoopReported && this.replicas.every((x) => x.ready && x.consecutive === 0)) {
          this.crashLoopReported = false;
          this.unhealthyReported = false;
          this.hooks?.recovered();
        }
      }, this.deps.timing.healthyPeriodMs),
    );
  }

  private unhealthy(detail: string): void {
    if (this.unhealthyReported || this.crashLoopReported) return;
    this.unhealthyReported = true;
    this.hooks?.unhealthy(detail);
  }

  private killReplica(r: Replica, why: string): void {
    if (r.killedFor) return;
    r.killedFor = why;
    r.launched?.kill('SIGKILL');
  }

  private exitCause(r: Replica, code: number | null, signal: NodeJS.Signals | null): string {
    const kills = oomKills(this.deps.isolation, { kind: 'app', id: this.app });
    const containerOom = code === 137 && !r.killedFor && this.run.container?.outOfMemory();
    if (kills > this.oomSeen || containerOom) {
      this.oomSeen = kills;
      return `was killed: exceeded its ram quota of ${Math.round(this.run.limits.memoryBytes / 2 ** 20)} MiB`;
    }
    if (r.killedFor) return `was killed: ${r.killedFor}`;
    return code !== null ? `exited with code ${code}` : `was killed by ${signal}`;
  }

  private onExit(r: Replica, gen: number, code: number | null, signal: NodeJS.Signals | null): void {
    if (r.gen !== gen) return;
    const ended = r.launched;
    r.child = null;
    r.launched = null;
    for (const t of r.timers) clearTimeout(t);
    r.timers = [];
    ended?.kill('SIGKILL'); // what the replica left behind in its group
    const wasReady = r.ready;
    r.ready = false;
    if (wasReady) this.hooks?.backendsChanged();
    if (this.stopping) return;
    const source = `web.${r.index}`;
    const cause = this.exitCause(r, code, signal);
    const stderr = r.lastStderr ? `: ${r.lastStderr}` : '';
    if (this.phase === 'booting' && this.deps.failFast) {
      const atBoot = cause.startsWith('exited ')
        ? `exited at boot ${cause.slice('exited '.length)}`
        : `${cause} at boot`;
      this.deps.log.berth(this.app, `${source} ${cause}`);
      this.failBoot(`the release ${atBoot}${stderr}`);
      return;
    }
    const now = Date.now();
    r.consecutive++;
    this.crashTimes = [...this.crashTimes.filter((t) => now - t < this.deps.timing.crashWindowMs), now];
    const detail = `${source} ${cause}${stderr}`;
    if (r.consecutive >= this.deps.timing.giveUpAfter) {
      this.deps.log.berth(this.app, `${source} ${cause}; giving up after ${r.consecutive} crashes in a row`);
      this.giveUp(`${detail} (${r.consecutive} crashes in a row; not restarted)`);
      return;
    }
    if (this.crashTimes.length >= this.deps.timing.crashLoopCount && !this.crashLoopReported) {
      this.crashLoopReported = true;
      this.hooks?.crashLoop(
        `${detail} (${this.crashTimes.length} crashes within ${seconds(this.deps.timing.crashWindowMs)})`,
      );
    }
    const delay = Math.min(this.deps.timing.backoffMaxMs, this.deps.timing.backoffInitialMs * 2 ** (r.consecutive - 1));
    this.deps.log.berth(this.app, `${source} ${cause}, restarting in ${seconds(delay)}`);
    r.timers.push(setTimeout(() => void this.startReplica(r), delay));
  }

  private giveUp(detail: string): void {
    this.phase = 'gave_up';
    this.settleBoot({ ok: false, reason: detail });
    void this.stop('gave_up');
    this.hooks?.gaveUp(detail);
  }

  /** Stops every replica (SIGTERM to its process group, SIGKILL after the grace time) and waits for them. */
  async stop(phase: 'stopped' | 'boot_failed' | 'gave_up' = 'stopped'): Promise<void> {
    this.stopping = true;
    this.phase = phase;
    if (this.bootTimer) clearTimeout(this.bootTimer);
    this.settleBoot({ ok: false, reason: 'the release was stopped before it became healthy' });
    await Promise.all(
      this.replicas.map(async (r) => {
        for (const t of r.timers) clearTimeout(t);
        r.timers = [];
        const wasReady = r.ready;
        r.ready = false;
        if (wasReady) this.hooks?.backendsChanged();
        const running = r.launched;
        if (!running || !r.exited) return;
        running.kill('SIGTERM');
        const kill = setTimeout(() => running.kill('SIGKILL'), this.deps.timing.stopGraceMs);
        await r.exited;
        clearTimeout(kill);
      }),
    );
    await Promise.all(this.replicas.map((r) => releaseNetwork(this.deps.isolation, this.networkName(r))));
  }
}
