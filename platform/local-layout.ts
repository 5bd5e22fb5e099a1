import { createHash } from 'node:crypto';
import path from 'node:path';

/**
 * Where the `local` data-plane driver keeps things on this machine. Two roots:
 *
 * - `privateRoot` (under BERTH_DATA_DIR, e.g. `.berth/local`): Berth's own files that app
 *   code must never read: git repositories, build and app logs, the driver's state. Mode
 *   0700, owned by the user Berth runs as.
 * - `appsRoot`: what app processes see: each app's directory with its releases, its home
 *   and its volumes. When Berth runs as root, app processes run as an unprivileged uid of
 *   their own, so this root must be traversable by others (0711) while the data dir stays
 *   closed (0700): it lies outside it (BERTH_APPS_DIR, default
 *   `/var/lib/berth/<hash of the data dir>`, see `systemAppsDir`), which also works when the
 *   data dir is under a folder others cannot enter (a clone in /root). Not root: under the
 *   data dir (`<data dir>/apps`). Each app's directory is 0750 root:<app gid>, so apps
 *   cannot read each other's files.
 *
 * Pure path and id math: creating the folders is the driver's job.
 */
export interface LocalLayout {
  privateRoot: string;
  appsRoot: string;
  /** One app's directory (releases, home, volumes). */
  appDir(appUuid: string): string;
  /** An immutable release built from one commit: `<appDir>/releases/<releaseId>`. */
  releaseDir(appUuid: string, releaseId: string): string;
  /** The release's manifest (what the builder found: kind, web command), beside it. */
  releaseManifest(appUuid: string, releaseId: string): string;
  /** The app's writable HOME (and TMPDIR) for its processes and builds. */
  homeDir(appUuid: string): string;
  /** A storage volume's directory (add-ons and services of kind storage, app volumes). */
  volumeDir(volumeUuid: string): string;
  /** stdout and stderr of every replica of the app, one line each, prefixed (see app-log-format). */
  appLogFile(appUuid: string): string;
  /** The build output of one deployment (GET /apps/{uuid}/deployments/{d}/logs). */
  buildLogFile(deploymentUuid: string): string;
  /** The bare repository a git_push app is pushed to (`/git/<app name>.git`). */
  gitRepo(appName: string): string;
}

export function localLayout(options: { dataDir: string; appsDir?: string }): LocalLayout {
  const privateRoot = path.join(options.dataDir, 'local');
  const appsRoot = options.appsDir ?? path.join(options.dataDir, 'apps');
  const appDir = (appUuid: string) => path.join(appsRoot, 'apps', appUuid);
  return {
    privateRoot,
    appsRoot,
    appDir,
    releaseDir: (appUuid, releaseId) => path.join(appDir(appUuid), 'releases', releaseId),
    releaseManifest: (appUuid, releaseId) => path.join(appDir(appUuid), 'releases', `${releaseId}.json`),
    homeDir: (appUuid) => path.join(appDir(appUuid), 'home'),
    volumeDir: (volumeUuid) => path.join(appsRoot, 'volumes', volumeUuid),
    appLogFile: (appUuid) => path.join(privateRoot, 'logs', 'apps', `${appUuid}.log`),
    buildLogFile: (deploymentUuid) => path.join(privateRoot, 'logs', 'builds', `${deploymentUuid}.log`),
    gitRepo: (appName) => path.join(privateRoot, 'git', `${appName}.git`),
  };
}

/** The default apps root for a root-run Berth whose data dir others cannot traverse. */
export function systemAppsDir(dataDir: string): string {
  return path.join('/var/lib/berth', createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 12));
}

/** First uid (and gid) of the range app identities are taken from. */
export const APP_UID_BASE = 200_000;
export const APP_UID_RANGE = 800_000;

/**
 * The unprivileged uid (= gid) an app's processes and builds run as when Berth is root: a
 * stable function of the app's uuid, so a restart of Berth finds the same owner on disk.
 * No passwd entry is needed (processes are spawned with numeric ids).
 */
export function appUid(appUuid: string): number {
  const n = parseInt(createHash('sha256').update(appUuid).digest('hex').slice(0, 8), 16);
  return APP_UID_BASE + (n % APP_UID_RANGE);
}

/**
 * The `image` a local release is known by in deployments and the driver interface:
 * `local-release:<app uuid>/<release id>`.
 */
export function releaseImage(appUuid: string, releaseId: string): string {
  return `local-release:${appUuid}/${releaseId}`;
}

export function parseReleaseImage(image: string): { appUuid: string; releaseId: string } | null {
  const m = /^local-release:([0-9a-f-]{36})\/([A-Za-z0-9._-]+)$/.exec(image);
  return m ? { appUuid: m[1]!, releaseId: m[2]! } : null;
}
