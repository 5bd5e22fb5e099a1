import type { Logger } from 'pino';
import type { LocalLayout } from '../../../../platform/local-layout';
import type { AppEventSink, IngressRoutes, LocalBuilder } from '../contracts';
import type { PodmanConfig } from '../images/config';
import type { Isolation } from '../sandbox/isolation';
import type { AppLogWriter } from './log';
import type { AppStateStore } from './state';
import type { ReleaseSupervisor, SupervisorTiming } from './supervisor';
import type { TcpForwarder } from './public-ports';

/** What runs for one app in this process. */
export interface AppRuntime {
  /** The release that serves (processes), or the folder a static release serves. */
  serving: ReleaseSupervisor | null;
  staticRoot: string | null;
  /** A rollout's release booting beside the serving one. */
  rolling: ReleaseSupervisor | null;
  /** Public ports: external port -> its forwarder and the internal port it reaches. */
  forwarders: Map<number, { fwd: TcpForwarder; internal: number }>;
  /** The web port of the serving run spec (public ports to it go round-robin over the replicas). */
  webPort: number;
  next: number;
  /** Rollouts run one after the other (a newer one stops the booting one first). */
  rollouts: Promise<void>;
  /** What the last rollout call asked for (release and a digest of its run spec): the same again is a retry. */
  lastRollout?: string;
  /** Counts queued rollouts: only the newest may take over the app (an older one still booting gives way). */
  rolloutGen: number;
}

/** The parts of the local apps driver (lifecycle, rollout, ports, jobs, volumes) share this. */
export interface AppsContext {
  layout: LocalLayout;
  isolation: Isolation;
  builder: LocalBuilder;
  ingress: IngressRoutes;
  events: AppEventSink;
  logger: Logger;
  store: AppStateStore;
  log: AppLogWriter;
  timing: SupervisorTiming;
  /** Podman as Berth runs it (image releases); null where images do not run. */
  podman: PodmanConfig | null;
  /** Prunes the app's old image releases and their images (in the background), after a rollout took over; absent: nothing to prune. */
  pruneImages?: (appUuid: string) => void;
  /** The app's runtime in this process (created empty on first use). */
  runtime(appUuid: string): AppRuntime;
}

export function emptyRuntime(): AppRuntime {
  return {
    serving: null,
    staticRoot: null,
    rolling: null,
    forwarders: new Map(),
    webPort: 8080,
    next: 0,
    rollouts: Promise.resolve(),
    rolloutGen: 0,
  };
}
