import type { LiveStatus } from '../../domain/apps';
import type { HealthCheck } from '../../entities/app';

/** What the data plane needs to run an app (identifiers and sizes; never secrets it does not use). */
export interface AppSpec {
  appUuid: string;
  name: string;
  resourceUuid: string;
  internalPort: number;
  cpuSize: number;
  ramSize: number;
  diskSize: number;
  replicas: number;
}

/** One storage volume an app uses: which volume (and folder of it), and where the app sees it. */
export interface AppMount {
  volumeId: string;
  subPath: string | null;
  mountPath: string;
}

/**
 * What an app's processes run with, decided by the control plane and handed to the driver
 * at every start, restart, rollout and cron run (the driver never reads the control plane's
 * tables for it; it may keep a sealed copy to start the app again after a restart of its own).
 */
export interface AppRunSpec {
  /** The effective environment: add-ons' variables, overlaid by the project's, then the app's. Secret: opened inside the activity, never in workflow data. */
  env: Record<string, string>;
  /** The port the web process listens on (PORT). */
  internalPort: number;
  /** Cores, bytes of memory and replicas of the app's quota. */
  cpuSize: number;
  ramSize: number;
  replicas: number;
  healthChecks: Partial<HealthCheck>[];
  mounts: AppMount[];
  /** Who may reach the app's workloads and what they may reach (absent in specs sealed before it existed). */
  network?: AppNetworkSpec;
}

/** An app's place on its workspace's network. */
export interface AppNetworkSpec {
  workspace: string;
  /** The name other apps of the workspace reach it by (the host of `internal_url`). */
  serviceName: string;
  /** Other apps of the workspace may connect to it. */
  allowConnections: boolean;
  /** The clusters of the add-ons attached to it: it may reach their servers. */
  clusters: string[];
  /** The VPC subnets it is attached to: each replica gets an interface on every one (none in a spec sealed before VPCs). */
  vpcs?: AppVpcAttachment[];
}

/** One VPC attachment of an app, as its replicas are plugged in. */
export interface AppVpcAttachment {
  attachmentUuid: string;
  vpcUuid: string;
  vpcCidrV4: string;
  subnetCidrV4: string;
  /** The address recorded at attach: a replica takes it when no other replica holds it. */
  address: string | null;
  /** A public subnet keeps the platform's default route; a private one routes everything through the VPC. */
  public: boolean;
  /** The name the VPC's resolver answers with the replicas' addresses (null: none). */
  fqdn: string | null;
}

/** What an app runs with where its record names nothing: one replica of 1 core and 512 MiB on 8080, no checks, no volumes. */
export const DEFAULT_APP_RUN: Omit<AppRunSpec, 'env'> = {
  internalPort: 8080,
  cpuSize: 1,
  ramSize: 512 * 2 ** 20,
  replicas: 1,
  healthChecks: [],
  mounts: [],
};

/** A stored registry credential of the app's workspace, opened inside the activity for one build. */
export interface RegistryLogin {
  /** The registry host it logs in to (registry_hostname, or the provider's own). */
  server: string;
  username: string;
  token: string;
}

/** A registry login for one image pull (container_registry): `server` null is the image's own registry. */
export type PullLogin = Omit<RegistryLogin, 'server'> & { server: string | null };

export interface BuildRequest {
  appUuid: string;
  deploymentUuid: string;
  method: string;
  /** How the source is built: `auto` (detection) or `dockerfile`. */
  builder: string;
  /** git methods: the commit to build. */
  commitSha: string | null;
  /** container_registry / parent_image: the image to roll out as is. */
  image: string | null;
  /** Registry login for container_registry, opened inside the activity for this call only. */
  registryAuth?: PullLogin | null;
  /** git methods: where the commit is fetched from (git_push: the driver's own repository of the app). */
  repository?: string | null;
  /** A login for a private repository, opened inside the activity for this call only. */
  credential?: { username: string; token: string } | null;
  /** builder dockerfile: the workspace's registry logins; the build uses those of the registries its FROM lines name. */
  registryLogins?: RegistryLogin[] | null;
}

export type BuildStatus =
  | { status: 'building' }
  | { status: 'succeeded'; image: string }
  | { status: 'failed'; reason: string }
  | { status: 'cancelled' };

/** The orchestrator's view of an app: `starting` until its replicas report, then a live status. */
export type AppRuntimeStatus = 'absent' | 'provisioned' | 'starting' | 'stopped' | 'scaled_to_zero' | LiveStatus;

export interface PortSpec {
  internalPort: number;
  protocol: string;
  externalPort: number | null;
}

/**
 * The apps part of the data-plane driver. Every operation is idempotent (called again
 * after a retry, it changes nothing more) and returns once the request is accepted;
 * progress is read with `status` / `buildStatus`.
 */
export interface AppsDriver {
  /** Creates the app's workload (namespace, service, volume) without starting it. */
  provision(spec: AppSpec): Promise<void>;
  /** Scales to the quota's replicas, run as `run` says; `status` reads starting, then a live status. */
  start(appUuid: string, run: AppRunSpec): Promise<void>;
  stop(appUuid: string): Promise<void>;
  /** Rolls the replicas with `run` (new variables, quota, checks); `status` reads starting, then a live status. */
  restart(appUuid: string, run: AppRunSpec): Promise<void>;
  /** Free-plan sleep: zero replicas, the workload kept. */
  scaleToZero(appUuid: string): Promise<void>;
  status(appUuid: string): Promise<AppRuntimeStatus>;
  startBuild(request: BuildRequest): Promise<void>;
  buildStatus(deploymentUuid: string): Promise<BuildStatus>;
  cancelBuild(deploymentUuid: string): Promise<void>;
  /** Rolls the image out, run as `run` says; `status` reads starting, then a live status. */
  rollout(appUuid: string, image: string, run: AppRunSpec): Promise<void>;
  /** The image the app runs now (null before its first deployment). */
  currentImage(appUuid: string): Promise<string | null>;
  /** Points the target at a copy of (or, with `shared`, the very) image of the source. */
  cloneImage(sourceAppUuid: string, targetAppUuid: string, options: { shared: boolean }): Promise<void>;
  /** Copies the source's volume into the target's (the target must be provisioned). */
  cloneVolume(sourceAppUuid: string, targetAppUuid: string): Promise<void>;
  /** Removes the copied volume again (saga compensation). */
  dropVolume(appUuid: string): Promise<void>;
  applyPorts(appUuid: string, ports: PortSpec[]): Promise<void>;
  /** Removes everything of the app; deleting an absent app is a success. */
  delete(appUuid: string): Promise<void>;
  /**
   * Why the app's last rollout did not take over (e.g. "the release exited at boot with
   * code 1: ..."); null when it did, is still under way, or the driver cannot tell. The
   * previous release keeps serving when one did.
   */
  rolloutFailure(appUuid: string): Promise<string | null>;
  /** Where a git_push app's pushes land (the build's repository); null when the driver keeps none. */
  pushRepository(appName: string): string | null;
}
