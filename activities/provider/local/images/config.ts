import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { LocalLayout } from '../../../../platform/local-layout';
import { CATATONIT, RUNC } from './runtime';

/**
 * Podman as Berth runs it: its own configuration files (CONTAINERS_CONF,
 * CONTAINERS_STORAGE_CONF) and its storage under the data directory, never a file under
 * /etc. The settings this machine kind needs were measured (docs/decisions.md, "Container
 * images on the local driver"): runc (Debian's crun fails in cgroup hybrid mode), the
 * cgroupfs manager and file events (no systemd), and ulimits podman can set here.
 */
export interface PodmanConfig {
  /** `<private root>/podman`: the configuration files, storage, run state and scratch space. */
  dir: string;
  /** The environment every podman command gets (with PATH): the two configuration files. */
  env: { CONTAINERS_CONF: string; CONTAINERS_STORAGE_CONF: string };
  /** Scratch folders of Berth's own (a pull's auth file), 0700. */
  scratchDir: string;
}

/** nofile and nproc as high as podman can set them on this machine kind (its own defaults fail: "error setting rlimit"). */
export const DEFAULT_ULIMITS = ['nofile=20000:20000', 'nproc=32768:32768'];

/** A TOML string or array of strings (containers.conf, storage.conf). */
export const toml = (value: string | string[]) =>
  Array.isArray(value) ? `[${value.map((v) => JSON.stringify(v)).join(', ')}]` : JSON.stringify(value);

export function containersConf(dir: string): string {
  return [
    '# Written by Berth (activities/provider/local/images/config.ts); rewritten at each start.',
    '[containers]',
    `default_ulimits = ${toml(DEFAULT_ULIMITS)}`,
    `init_path = ${toml(CATATONIT)}`,
    // output goes straight to `podman run`'s own stdout and stderr: the supervisor's app log
    'log_driver = "passthrough"',
    '',
    '[engine]',
    'runtime = "runc"',
    'cgroup_manager = "cgroupfs"',
    'events_logger = "file"',
    `events_logfile_path = ${toml(path.join(dir, 'events.log'))}`,
    `tmp_dir = ${toml(path.join(dir, 'tmp'))}`,
    `volume_path = ${toml(path.join(dir, 'volumes'))}`,
    '',
    '[engine.runtimes]',
    `runc = ${toml([RUNC])}`,
    '',
    '[network]',
    `network_config_dir = ${toml(path.join(dir, 'networks'))}`,
    '',
  ].join('\n');
}

export function storageConf(dir: string): string {
  return [
    '# Written by Berth (activities/provider/local/images/config.ts); rewritten at each start.',
    '[storage]',
    'driver = "overlay"',
    `graphroot = ${toml(path.join(dir, 'storage'))}`,
    `runroot = ${toml(path.join(dir, 'run'))}`,
    '',
    '[storage.options.overlay]',
    // no private bind mount of the storage folder onto itself: it would outlive Berth (and a removed data dir)
    'skip_mount_home = "true"',
    '',
  ].join('\n');
}

/**
 * Image names as Docker reads them (the registries.conf of a Dockerfile build): a name
 * without a registry (`FROM node:20`) is on Docker Hub; podman never asks which registry
 * (it cannot, without a terminal) and never reads the machine's own registries.conf.
 */
export function registriesConf(): string {
  return [
    '# Written by Berth (activities/provider/local/images/config.ts).',
    'unqualified-search-registries = ["docker.io"]',
    'short-name-mode = "permissive"',
    '',
  ].join('\n');
}

/** Where podman's files are for this layout (pure). */
export function podmanConfig(layout: LocalLayout): PodmanConfig {
  const dir = path.join(layout.privateRoot, 'podman');
  return {
    dir,
    env: {
      CONTAINERS_CONF: path.join(dir, 'containers.conf'),
      CONTAINERS_STORAGE_CONF: path.join(dir, 'storage.conf'),
    },
    scratchDir: path.join(dir, 'scratch'),
  };
}

/** Writes the configuration files and creates the folders (idempotent; a file already right is left alone). */
export function ensurePodmanConfig(cfg: PodmanConfig): void {
  for (const sub of ['', 'storage', 'run', 'tmp', 'volumes', 'networks', 'scratch'])
    mkdirSync(path.join(cfg.dir, sub), { recursive: true, mode: 0o700 });
  const want: [string, string][] = [
    [cfg.env.CONTAINERS_CONF, containersConf(cfg.dir)],
    [cfg.env.CONTAINERS_STORAGE_CONF, storageConf(cfg.dir)],
  ];
  for (const [file, text] of want) {
    let now: string | null = null;
    try {
      now = readFileSync(file, 'utf8');
    } catch {
      // not written yet
    }
    if (now !== text) writeFileSync(file, text, { mode: 0o600 });
  }
}
