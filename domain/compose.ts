import { parseDocument } from 'yaml';

/**
 * Compose file analysis (stacks analyze): pure, no I/O. Reads the compose YAML into a
 * manifest of app services, managed add-ons (detected from well-known database and cache
 * images), named volumes and environment variables, with warnings for what the platform
 * will not honour.
 */
export type AddonType = 'postgres' | 'mysql' | 'valkey';

export interface ManifestService {
  name: string;
  image: string | null;
  build: { context: string; dockerfile: string | null } | null;
  ports: number[];
  depends_on: string[];
  volumes: string[];
  /** Where each named volume is mounted in the service (`volume`: its name in `volumes`). */
  mounts: { volume: string; path: string }[];
  cpu_size: number;
  ram_size: number;
}

export interface ManifestAddon {
  name: string;
  type: AddonType;
  image: string;
  version: string | null;
  volumes: string[];
  cpu_size: number;
  ram_size: number;
  disk_size: number;
}

export interface ManifestVolume {
  name: string;
  services: string[];
  disk_size: number;
}

export interface Manifest {
  compose_file: string;
  services: ManifestService[];
  addons: ManifestAddon[];
  volumes: ManifestVolume[];
  /** `${VAR}` (or `$VAR`, `${VAR:?message}`) with no default anywhere: values needed before POST /stacks. */
  required_variables: string[];
  /** Variables that have a default (`${VAR:-default}`), so a value is optional. */
  optional_variables: Array<{ name: string; default: string }>;
}

export type WarningCode = 'unsupported_key' | 'host_network' | 'privileged' | 'bind_mount';

export interface ComposeWarning {
  code: WarningCode;
  service: string | null;
  key: string;
  message: string;
}

export class ComposeError extends Error {
  override readonly name = 'ComposeError';
}

const GIB = 2 ** 30;
const MIB = 2 ** 20;

const ADDON_IMAGES: Record<string, AddonType> = {
  postgres: 'postgres',
  'postgis/postgis': 'postgres',
  'bitnami/postgresql': 'postgres',
  'timescale/timescaledb': 'postgres',
  mysql: 'mysql',
  mariadb: 'mysql',
  'bitnami/mysql': 'mysql',
  'bitnami/mariadb': 'mysql',
  'mysql/mysql-server': 'mysql',
  redis: 'valkey',
  'valkey/valkey': 'valkey',
  valkey: 'valkey',
  'bitnami/redis': 'valkey',
  'bitnami/valkey': 'valkey',
  'redis/redis-stack-server': 'valkey',
};

/** Defaults per workload (cores, bytes) when the compose file sets no limits. */
export const DEFAULT_SIZES = {
  app: { cpu: 0.5, ram: 512 * MIB, disk: 0 },
  postgres: { cpu: 1, ram: 1 * GIB, disk: 5 * GIB },
  mysql: { cpu: 1, ram: 1 * GIB, disk: 5 * GIB },
  valkey: { cpu: 0.5, ram: 512 * MIB, disk: 1 * GIB },
  volume: 1 * GIB,
} as const;

const SUPPORTED_SERVICE_KEYS = new Set([
  'image',
  'build',
  'ports',
  'expose',
  'environment',
  'env_file',
  'command',
  'entrypoint',
  'depends_on',
  'volumes',
  'restart',
  'healthcheck',
  'deploy',
  'labels',
  'working_dir',
  'user',
  'container_name',
  'hostname',
  'stop_grace_period',
  'stop_signal',
  'init',
  'tty',
  'stdin_open',
  'platform',
  'pull_policy',
  'profiles',
]);
const SUPPORTED_TOP_KEYS = new Set(['version', 'name', 'services', 'volumes']);

/** `registry.example.com:5000/library/postgres:16-alpine@sha256:...` -> { repo: 'postgres', tag: '16-alpine' } */
export function parseImage(image: string): { repo: string; tag: string | null } {
  let ref = image.split('@')[0]!;
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  let tag: string | null = null;
  if (colon > slash) {
    tag = ref.slice(colon + 1);
    ref = ref.slice(0, colon);
  }
  const parts = ref.split('/');
  if (parts.length > 1 && (parts[0]!.includes('.') || parts[0]!.includes(':') || parts[0] === 'localhost'))
    parts.shift();
  if (parts[0] === 'library') parts.shift();
  return { repo: parts.join('/').toLowerCase(), tag };
}

export function detectAddon(image: string): AddonType | null {
  return ADDON_IMAGES[parseImage(image).repo] ?? null;
}

/** "0.5" -> 0.5 cores; "512M" / "1g" / 1048576 -> bytes. */
function parseCpu(v: unknown): number | null {
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
  return Number.isFinite(n) && n > 0 ? n : null;
}

export function parseBytes(v: unknown): number | null {
  if (typeof v === 'number') return v > 0 ? v : null;
  if (typeof v !== 'string') return null;
  const m = /^(\d+(?:\.\d+)?)\s*([bkmg])?i?b?$/i.exec(v.trim());
  if (!m) return null;
  const unit = { b: 1, k: 1024, m: MIB, g: GIB }[(m[2] ?? 'b').toLowerCase() as 'b' | 'k' | 'm' | 'g'];
  return Math.round(Number(m[1]) * unit);
}

const VAR = /\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*)|(:?\?)([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g;

/** Variables used in a string: name, and its default when it has one. */
export function variablesIn(text: string): Array<{ name: string; default: string | null }> {
  const out: Array<{ name: string; default: string | null }> = [];
  for (const m of text.matchAll(VAR)) {
    if (m[0] === '$$') continue;
    const name = m[1] ?? m[6]!;
    out.push({ name, default: m[2] ? m[3]! : null });
  }
  return out;
}

function walkStrings(value: unknown, visit: (s: string) => void): void {
  if (typeof value === 'string') visit(value);
  else if (Array.isArray(value)) value.forEach((v) => walkStrings(v, visit));
  else if (value && typeof value === 'object') Object.values(value).forEach((v) => walkStrings(v, visit));
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function parsePorts(service: string, raw: unknown): number[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) throw new ComposeError(`services.${service}.ports must be a list`);
  const ports: number[] = [];
  for (const p of raw) {
    let target: unknown;
    if (isRecord(p)) target = p.target;
    else if (typeof p === 'number') target = p;
    else if (typeof p === 'string') target = p.split('/')[0]!.split(':').pop();
    const n = typeof target === 'number' ? target : Number(String(target).split('-')[0]);
    if (!Number.isInteger(n) || n < 1 || n > 65535)
      throw new ComposeError(`services.${service}.ports has an invalid port: ${JSON.stringify(p)}`);
    if (!ports.includes(n)) ports.push(n);
  }
  return ports;
}

interface Mount {
  source: string | null;
  /** The path in the container (null: not given). */
  target: string | null;
  bind: boolean;
}

function parseVolumes(service: string, raw: unknown): Mount[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) throw new ComposeError(`services.${service}.volumes must be a list`);
  return raw.map((v) => {
    if (isRecord(v)) {
      const source = typeof v.source === 'string' ? v.source : null;
      const target = typeof v.target === 'string' ? v.target : null;
      return { source, target, bind: v.type === 'bind' || (source !== null && /^[./~]/.test(source)) };
    }
    if (typeof v !== 'string')
      throw new ComposeError(`services.${service}.volumes has an invalid entry: ${JSON.stringify(v)}`);
    const parts = v.split(':');
    if (parts.length === 1) return { source: null, target: parts[0]!, bind: false };
    const source = parts[0]!;
    return { source, target: parts[1] ?? null, bind: /^[./~]/.test(source) || source.includes('/') };
  });
}

function dependsOn(raw: unknown): string[] {
  if (Array.isArray(raw)) return raw.map(String);
  if (isRecord(raw)) return Object.keys(raw);
  return [];
}

/** Analyzes a compose file. Throws ComposeError (with the parser's message) when it cannot be read. */
export function analyzeCompose(text: string, composeFile: string): { manifest: Manifest; warnings: ComposeWarning[] } {
  const doc = parseDocument(text, { uniqueKeys: true, merge: true, prettyErrors: true });
  if (doc.errors.length > 0) throw new ComposeError(`${composeFile}: ${doc.errors[0]!.message}`);
  let root: unknown;
  try {
    root = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw new ComposeError(`${composeFile}: ${(err as Error).message}`);
  }
  if (!isRecord(root)) throw new ComposeError(`${composeFile}: the compose file must be a mapping`);
  if (!isRecord(root.services) || Object.keys(root.services).length === 0)
    throw new ComposeError(`${composeFile}: no services are defined`);
  const warnings: ComposeWarning[] = [];
  for (const key of Object.keys(root)) {
    if (!SUPPORTED_TOP_KEYS.has(key) && !key.startsWith('x-')) {
      warnings.push({
        code: 'unsupported_key',
        service: null,
        key,
        message: `top-level "${key}" is not supported and is ignored`,
      });
    }
  }
  const declaredVolumes = isRecord(root.volumes) ? Object.keys(root.volumes) : [];
  const services: ManifestService[] = [];
  const addons: ManifestAddon[] = [];
  const volumeUse = new Map<string, string[]>(declaredVolumes.map((v) => [v, []]));

  for (const [name, raw] of Object.entries(root.services)) {
    if (!/^[a-z0-9][a-z0-9_.-]*$/i.test(name)) throw new ComposeError(`service name "${name}" is not valid`);
    if (!isRecord(raw)) throw new ComposeError(`services.${name} must be a mapping`);
    const image = raw.image === undefined ? null : String(raw.image);
    let build: ManifestService['build'] = null;
    if (typeof raw.build === 'string') build = { context: raw.build, dockerfile: null };
    else if (isRecord(raw.build))
      build = {
        context: typeof raw.build.context === 'string' ? raw.build.context : '.',
        dockerfile: typeof raw.build.dockerfile === 'string' ? raw.build.dockerfile : null,
      };
    else if (raw.build !== undefined) throw new ComposeError(`services.${name}.build must be a path or a mapping`);
    if (!image && !build) throw new ComposeError(`services.${name} has neither image nor build`);

    for (const key of Object.keys(raw)) {
      if (key === 'network_mode') {
        if (raw.network_mode === 'host')
          warnings.push({
            code: 'host_network',
            service: name,
            key,
            message: `${name}: host networking is not available; the service gets its own network`,
          });
        else
          warnings.push({
            code: 'unsupported_key',
            service: name,
            key,
            message: `${name}: "network_mode" is not supported and is ignored`,
          });
      } else if (key === 'privileged') {
        if (raw.privileged === true)
          warnings.push({
            code: 'privileged',
            service: name,
            key,
            message: `${name}: privileged containers are not allowed; it runs unprivileged`,
          });
      } else if (!SUPPORTED_SERVICE_KEYS.has(key) && !key.startsWith('x-')) {
        warnings.push({
          code: 'unsupported_key',
          service: name,
          key,
          message: `${name}: "${key}" is not supported and is ignored`,
        });
      }
    }
    const mounts = parseVolumes(name, raw.volumes);
    const named: string[] = [];
    const namedMounts: ManifestService['mounts'] = [];
    for (const m of mounts) {
      if (m.bind) {
        warnings.push({
          code: 'bind_mount',
          service: name,
          key: 'volumes',
          message: `${name}: bind mount of "${m.source}" is not available; use a named volume`,
        });
      } else if (m.source) {
        if (!volumeUse.has(m.source))
          throw new ComposeError(`services.${name}.volumes refers to undefined volume "${m.source}"`);
        if (!m.target || !m.target.startsWith('/'))
          throw new ComposeError(
            `services.${name}.volumes: volume "${m.source}" needs an absolute path to be mounted at`,
          );
        volumeUse.get(m.source)!.push(name);
        named.push(m.source);
        namedMounts.push({ volume: m.source, path: m.target });
      }
    }
    const limits =
      isRecord(raw.deploy) && isRecord(raw.deploy.resources) && isRecord(raw.deploy.resources.limits)
        ? raw.deploy.resources.limits
        : {};
    const addonType = image && !build ? detectAddon(image) : null;
    if (addonType) {
      const d = DEFAULT_SIZES[addonType];
      addons.push({
        name,
        type: addonType,
        image: image!,
        version: parseImage(image!).tag,
        volumes: named,
        cpu_size: parseCpu(limits.cpus) ?? d.cpu,
        ram_size: parseBytes(limits.memory) ?? d.ram,
        disk_size: d.disk,
      });
    } else {
      services.push({
        name,
        image,
        build,
        ports: parsePorts(name, raw.ports),
        depends_on: dependsOn(raw.depends_on),
        volumes: named,
        mounts: namedMounts,
        cpu_size: parseCpu(limits.cpus) ?? DEFAULT_SIZES.app.cpu,
        ram_size: parseBytes(limits.memory) ?? DEFAULT_SIZES.app.ram,
      });
    }
  }

  const uses = new Map<string, string | null>();
  walkStrings(root, (s) => {
    for (const v of variablesIn(s)) {
      const prev = uses.get(v.name);
      if (prev === undefined || (prev !== null && v.default === null)) uses.set(v.name, v.default);
    }
  });
  const required = [...uses]
    .filter(([, d]) => d === null)
    .map(([n]) => n)
    .sort();
  const optional = [...uses]
    .filter(([, d]) => d !== null)
    .map(([name, d]) => ({ name, default: d! }))
    .sort((a, b) => a.name.localeCompare(b.name));

  return {
    manifest: {
      compose_file: composeFile,
      services,
      addons,
      volumes: [...volumeUse].map(([name, svc]) => ({ name, services: svc, disk_size: DEFAULT_SIZES.volume })),
      required_variables: required,
      optional_variables: optional,
    },
    warnings,
  };
}

/** Compose file names looked for when compose_path names a directory, in order. */
export const COMPOSE_FILE_NAMES = ['compose.yaml', 'compose.yml', 'docker-compose.yaml', 'docker-compose.yml'];

/** compose_path must stay inside the repository: relative, no `..` segments, no backslashes. */
export function composePathProblem(p: string): string | null {
  if (p.startsWith('/') || p.includes('\\')) return 'must be a relative path inside the repository';
  if (p.split('/').some((s) => s === '..')) return 'must not contain .. segments';
  if (/[\u0000-\u001f]/.test(p)) return 'must not contain control characters';
  return null;
}
