/**
 * The seams between the parts of the `local` data-plane driver (one machine, everything
 * real): the builder turns a commit into a release, the apps driver runs releases as
 * supervised processes, the ingress routes HTTP to them. Each part lives in its own file
 * of this folder; they meet only through these types.
 */
import type { BuildStatus, RegistryLogin } from '../../../platform/drivers/apps';

/** What the builder found in the source and how the release runs (written beside the release as JSON). */
export interface ReleaseManifest {
  releaseId: string;
  appUuid: string;
  commitSha: string | null;
  /** `process`: run `web` in the release directory; `static`: the ingress serves `staticRoot`; `image`: run `image` with podman. */
  kind: 'process' | 'static' | 'image';
  /** Which detection won: a Procfile, Node, Python or a static folder; or a registry image, or a Dockerfile built here. */
  stack: 'procfile' | 'node' | 'python' | 'static' | 'image' | 'dockerfile';
  /** For image releases: the image pinned to its digest (`registry/path@sha256:...`). */
  image?: string | null;
  /** The web command, run as `sh -c <web>` in the release directory with PORT set. */
  web: string | null;
  /** For static releases: the folder served, relative to the release directory. */
  staticRoot: string | null;
  /** Folders (relative to the release directory) put first on PATH at run time, e.g. `.venv/bin`, `node_modules/.bin`. */
  path: string[];
  builtAt: string;
}

/** The manifest of an image release: a registry image (`stack: image`, no commit) or a Dockerfile built here. */
export function imageReleaseManifest(r: {
  releaseId: string;
  appUuid: string;
  commitSha: string | null;
  stack: 'image' | 'dockerfile';
  image: string;
  builtAt?: Date;
}): ReleaseManifest {
  return {
    releaseId: r.releaseId,
    appUuid: r.appUuid,
    commitSha: r.commitSha,
    kind: 'image',
    stack: r.stack,
    web: null,
    staticRoot: null,
    path: [],
    image: r.image,
    builtAt: (r.builtAt ?? new Date()).toISOString(),
  };
}

/** Where the builder fetches the commit from. */
export interface BuildSource {
  /** A local bare repository (git_push: the app's own) or an https (or allowed file://) URL. */
  repository: string;
  commitSha: string;
  /** The folder of the repository the release is made of (a stack service's build context); default: the whole tree. */
  context?: string;
  /**
   * A Dockerfile build: the Dockerfile's path in the context ('' or absent name: Dockerfile,
   * else Containerfile, at the context's root); null or absent: the builder detects how the
   * source runs (Procfile, Node, Python, static).
   */
  dockerfile?: string | null;
  /** Without `dockerfile`: a Dockerfile (or Containerfile) at the context's root is built if there is one (a stack's `build:`), else the source is detected. */
  dockerfileIfPresent?: boolean;
  /** A stored credential for a private repository, opened for this build only. */
  credential?: { username: string; token: string } | null;
  /** A Dockerfile build: the workspace's registry logins, opened for this build only (it uses those its FROM lines need). */
  registryLogins?: RegistryLogin[] | null;
}

export interface LocalBuilder {
  /** Starts building (idempotent per deployment); output goes to the deployment's build log. */
  start(input: { appUuid: string; deploymentUuid: string; source: BuildSource }): Promise<void>;
  /** `succeeded` carries `releaseImage(appUuid, releaseId)`; a build a restart interrupted reads failed. */
  status(deploymentUuid: string): Promise<BuildStatus>;
  /** Kills the build's processes; the status reads cancelled. */
  cancel(deploymentUuid: string): Promise<void>;
  /** Reads a release's manifest (null when absent). */
  manifest(appUuid: string, releaseId: string): Promise<ReleaseManifest | null>;
  /** Copies a release to another app (clone), owned by that app; answers the new release id. */
  copyRelease(fromAppUuid: string, releaseId: string, toAppUuid: string): Promise<string>;
}

/** One place an app's HTTP traffic can go. */
export type Backend = { kind: 'process'; host: string; port: number } | { kind: 'static'; root: string };

/**
 * The routing table the apps driver keeps the ingress up to date through. The ingress
 * itself reads the app's routing settings (name, verified custom domains, basic auth,
 * maintenance, private access, state) from the database; the driver tells it where the
 * app's healthy replicas are.
 */
export interface IngressRoutes {
  /** The healthy replicas of the release that serves the app now (empty: nothing to serve). */
  setBackends(appUuid: string, backends: Backend[]): void;
  /** Forgets the app (deleted). */
  remove(appUuid: string): void;
}

/** How the driver tells the app's workflow what really happened (signals to `app/<uuid>`). */
export interface AppEventSink {
  health(appUuid: string, event: 'app_unhealthy' | 'app_crash_loop' | 'app_stopped', detail: string): Promise<void>;
  liveStatus(appUuid: string, status: 'running' | 'failed' | 'problem'): Promise<void>;
  /** A request reached the app (wakes a sleeping app; keeps a free-plan app awake). */
  traffic(appUuid: string): Promise<void>;
}
