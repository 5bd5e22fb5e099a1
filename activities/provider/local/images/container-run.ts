import path from 'node:path';
import type { Isolation } from '../sandbox/isolation';
import type { Workload } from '../sandbox/launcher';
import type { PodmanConfig } from './config';
import { podmanEnv, runPodman } from './podman';
import { APP_ID_COUNT } from './id-range';
import { PODMAN } from './runtime';

/** How one replica of an image release runs (what `podman run` is told). */
export interface ContainerRunSpec {
  /** The container's name (unique per replica start: `berth-<app>-<release>-<run>-web<n>-<start>`). */
  name: string;
  /** The pinned reference (`registry/path@sha256:...`), already in podman's storage. */
  image: string;
  /** Names of the variables the container gets (PORT among them); their values ride on podman's own environment. */
  envNames: string[];
  /** Variables whose names podman reads itself (PATH, HOME, TMPDIR): given with their values. */
  envValues?: Record<string, string>;
  /** The app's quota, as the container's own cgroup limits (podman's cgroupfs manager, under its libpod_parent). */
  memoryBytes: number;
  cpus: number;
  /**
   * The cgroup (from each controller's root) the container's own is made under: the app's,
   * whose limit all its replicas share (as process replicas do) and whose peak usage tells an
   * out-of-memory kill (cgroups.ts). Null: none (no cgroups here).
   */
  cgroupParent?: string | null;
  /**
   * The host id the container's root is mapped to, its 65536 ids following (the app's id
   * range, id-range.ts: an image's USER other than root is an id of the app's too); null: no
   * user namespace (Berth not root).
   */
  idBase: number | null;
  /** The workload's own network namespace (`--network ns:<path>`); absent: the network `podman run` itself is in (the launcher's namespace for the replica). */
  netnsPath?: string;
  /** The resolver the container's /etc/resolv.conf names (the workload network's gateway); absent: the machine's. */
  dns?: string;
  /** Storage volumes bind-mounted into the container (their folders opened to its ids: volume-grants.ts). */
  mounts?: { source: string; target: string }[];
  /** Labels (the app's uuid: leftovers are found by it). */
  labels?: Record<string, string>;
}

/** `podman run` for one replica: in the foreground, its output on podman's own stdout and stderr (the app log). */
export function containerRunArgv(spec: ContainerRunSpec): string[] {
  const argv = [PODMAN, 'run', '--rm', '--replace', '--init', '--pull', 'never', '--name', spec.name];
  argv.push('--cgroup-manager', 'cgroupfs', '--log-driver', 'passthrough');
  const bytes = `${Math.max(6 * 2 ** 20, Math.floor(spec.memoryBytes))}b`;
  argv.push('--memory', bytes, '--memory-swap', bytes, '--cpus', String(spec.cpus));
  // conmon stays in Berth's cgroup: the app's holds only the container
  if (spec.cgroupParent) argv.push('--cgroups', 'no-conmon', '--cgroup-parent', spec.cgroupParent);
  // one contiguous range: podman 4.3 fails to mount the overlay of a map of several (measured)
  if (spec.idBase !== null)
    argv.push('--uidmap', `0:${spec.idBase}:${APP_ID_COUNT}`, '--gidmap', `0:${spec.idBase}:${APP_ID_COUNT}`);
  // host: the network podman itself runs in (the launcher starts it inside the workload's namespace)
  argv.push('--network', spec.netnsPath ? `ns:${spec.netnsPath}` : 'host');
  if (spec.dns) argv.push('--dns', spec.dns);
  for (const m of spec.mounts ?? []) argv.push('--volume', `${m.source}:${m.target}`);
  for (const [k, v] of Object.entries(spec.labels ?? {})) argv.push('--label', `${k}=${v}`);
  for (const name of spec.envNames) argv.push('--env', name);
  for (const [k, v] of Object.entries(spec.envValues ?? {})) argv.push('--env', `${k}=${v}`);
  argv.push(spec.image);
  return argv;
}

/** Variable names podman (or the libraries under it) reads for itself: they cannot ride on its environment. */
function podmanReads(name: string): boolean {
  return (
    /^(CONTAINERS|PODMAN|BUILDAH|STORAGE|XDG|CONTAINER)_/.test(name) ||
    ['PATH', 'HOME', 'TMPDIR', 'REGISTRY_AUTH_FILE', 'NOTIFY_SOCKET', 'LISTEN_FDS', 'LISTEN_PID'].includes(name)
  );
}

/** Of these, the ones given on the command line with their value (paths, never secrets by nature); the others are not passed. */
const GIVEN_BY_VALUE = new Set(['PATH', 'HOME', 'TMPDIR']);

/**
 * The launcher's workload for one replica: podman run as Berth (no sandbox of the launcher:
 * podman drops the container's privileges itself), listening (the launcher picks the port
 * and puts PORT in the environment). The app's variables reach the container by name from
 * podman's own environment, so no value is on a command line; `dropped` names the
 * variables that cannot (podman reads them itself).
 */
export function containerWorkload(
  cfg: PodmanConfig,
  spec: Omit<ContainerRunSpec, 'envNames' | 'envValues'>,
  env: Record<string, string>,
): { workload: Workload; dropped: string[] } {
  const carried: Record<string, string> = {};
  const byValue: Record<string, string> = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (name === 'PORT') continue; // the launcher's
    if (!podmanReads(name)) carried[name] = value;
    else if (GIVEN_BY_VALUE.has(name)) byValue[name] = value;
    else dropped.push(name);
  }
  const argv = containerRunArgv({ ...spec, envNames: [...Object.keys(carried), 'PORT'], envValues: byValue });
  return {
    // conmon writes its files (an `oom` marker when the container runs out of memory) in its working folder: podman's own
    workload: {
      sandbox: null,
      command: argv,
      cwd: path.join(cfg.dir, 'tmp'),
      env: { ...carried, ...podmanEnv(cfg) },
      listens: true,
    },
    dropped,
  };
}

/** Removes a container at once (what a SIGKILL of its `podman run` leaves running); a gone one is fine. */
export async function removeContainer(iso: Isolation, cfg: PodmanConfig, name: string): Promise<void> {
  await runPodman(iso, cfg, ['rm', '--force', '--ignore', '--time', '0', name]);
}

/** Removes every container labelled for the app (a previous Berth's replicas). */
export async function removeAppContainers(iso: Isolation, cfg: PodmanConfig, appUuid: string): Promise<void> {
  const listed = await runPodman(iso, cfg, ['ps', '--all', '--quiet', '--filter', `label=berth.app=${appUuid}`]);
  const ids = listed.stdout.split('\n').filter(Boolean);
  if (ids.length > 0) await runPodman(iso, cfg, ['rm', '--force', '--ignore', '--time', '0', ...ids]);
}
