import { isIP } from 'node:net';
import path from 'node:path';
import { parseAllowList } from '../domain/webhook-destination';
import { DEFAULT_WORKLOAD_RANGE, parseCidr } from './workload-addresses';

/**
 * The one typed configuration module. Only bin/ and this file read process.env (`loadConfig`);
 * everything else receives a Config (or the part of it that it needs).
 */
export interface Config {
  /** PostgreSQL connection string; unset means the embedded PostgreSQL under dataDir. */
  databaseUrl: string | undefined;
  /** Temporal frontend address; unset means the Temporal CLI dev server started by `berth dev`. */
  temporalAddress: string | undefined;
  temporalNamespace: string;
  temporalCli: string | undefined;
  temporalPort: number;
  temporalUiPort: number;
  /** Port of the embedded PostgreSQL (only when DATABASE_URL is unset). */
  embeddedPgPort: number;
  taskQueue: string;
  host: string;
  port: number;
  dataDir: string;
  /** Keyring "kid:base64key[,kid:base64key...]"; the first entry encrypts. Unset: generated under dataDir. */
  secretKey: string | undefined;
  bootstrapToken: string | undefined;
  logLevel: string;
  reconcileIntervalMs: number;
  webhookAllowCidrs: string[];
  /** Private or loopback ranges a tenant's image registry may be at (BERTH_REGISTRY_ALLOW_CIDRS; default none). */
  registryAllowCidrs: string[];
  dnsServers: string[];
  smtpUrl: string | undefined;
  mailFrom: string;
  /** The data-plane driver: `local` (this machine, everything real; the default) or `simulated` (fault-injection tests). */
  provider: ProviderName;
  /** Where app code's files live when Berth is root (platform/local-layout.ts); unset: the default. */
  appsDir: string | undefined;
  /** Free-plan apps sleep after this many seconds without a request through the ingress. */
  appIdleTimeoutS: number;
  providerFaultRate: number;
  providerLatencyMs: number;
  s3Endpoint: string | undefined;
  /** The cluster's own ranges (pods, services) and the workload network's; no VPC range may overlap them. */
  platformNetworks: string[];
  /** Public IPv4 addresses per region code for site-to-site connections ("code=cidr|addr[,...];..."). */
  publicIpv4Pools: Record<string, string[]>;
  /** Operator credentials and region of BERTH_S3_ENDPOINT. */
  s3AccessKey: string | undefined;
  s3SecretKey: string | undefined;
  s3Region: string;
  /** Port of the embedded object store `berth dev` runs when BERTH_S3_ENDPOINT is unset (0: any free port). */
  embeddedS3Port: number;
  /** Static sites are served at https://<name>.<sitesDomain>. */
  sitesDomain: string;
  /** Lets stacks and static sites clone file:// repositories (tests, local development); off by default. */
  gitAllowFileUrls: boolean;
  /** CA bundle git trusts for HTTPS repositories (a self-hosted code host with a private CA). */
  gitCaFile: string | undefined;
  /** Port of the simulated ingress `berth dev` runs (0: none). */
  simIngressPort: number;
  /** Port of the local driver's ingress, the reverse proxy in front of every app (BERTH_PROVIDER=local). */
  ingressPort: number;
  /** Port of the local ingress's HTTPS listener (BERTH_INGRESS_TLS_PORT; default 443 as root, 8443 as a user). */
  ingressTlsPort: number;
  /**
   * The range the local driver's workloads get their addresses from, one network namespace
   * each (BERTH_WORKLOAD_NETWORK; default 10.200.0.0/13; `off`: workloads share the machine's
   * network, and the banner says tenant network isolation is off).
   */
  workloadNetwork: string | null;
  /**
   * The platform's image registry every release image is pushed to (BERTH_REGISTRY):
   * `embedded` (the default: Debian's docker-registry on loopback, credentials under the
   * data dir), `off`, or `host[:port]` of one of the operator's, logged into with
   * BERTH_REGISTRY_USERNAME and BERTH_REGISTRY_PASSWORD.
   */
  registry: RegistrySetting;
  /**
   * The port apps answer HTTPS at, as `public_url` shows it (BERTH_PUBLIC_HTTPS_PORT; default: the
   * local ingress's HTTPS port, or 443 when the data plane is not this machine's).
   */
  publicHttpsPort: number;
  /** ACME directory Berth obtains custom domains' certificates from (BERTH_ACME_DIRECTORY; unset: none are obtained). */
  acmeDirectory: string | undefined;
  /** Contact address of the platform's ACME account (BERTH_ACME_EMAIL). */
  acmeEmail: string | undefined;
  /** CA bundle to trust for the ACME directory's own HTTPS (BERTH_ACME_CA_FILE; a test or private ACME server). */
  acmeCaFile: string | undefined;
  /** The API's public origin (no trailing slash), shown in links such as an app's `git_url`. */
  publicUrl: string;
  /** The local driver's valkey server binary (BERTH_VALKEY_SERVER); unset: `valkey-server` or `redis-server` on PATH. */
  valkeyServer: string | undefined;
  /** The local driver's MySQL server binary (BERTH_MYSQL_SERVER); unset: `mariadbd` or `mysqld` on PATH or in /usr/sbin. */
  mysqlServer: string | undefined;
  /** Requests each caller (token, or app + client address) may make per window (BERTH_RATE_LIMIT). */
  rateLimit: RateLimit;
  /** A prebuilt workflow bundle (`berth bundle <file>`); unset: a worker bundles workflows/ in a child process at start. */
  workflowBundle: string | undefined;
  /**
   * Workflows a worker keeps in its sticky cache (BERTH_WORKER_CACHED_WORKFLOWS; 0: none).
   * An evicted workflow is replayed from its history at its next task; a workflow waiting
   * on a timer (a webhook retry, a verification backoff) need not stay cached.
   */
  workerCachedWorkflows: number;
  /** How far a worker process's V8 heaps may grow past their live data before a full collection (docs/performance.md). */
  workerHeap: WorkerHeapLimits;
}

/**
 * BERTH_WORKER_HEAP_GROWTH_PERCENT: a worker process's heaps may hold this much garbage,
 * as a share of their live data, before V8 runs a full collection (0: V8's own factor,
 * which lets a busy heap reach 3-4 times its live data). BERTH_WORKFLOW_THREAD_SEMI_SPACE_MB:
 * the workflow thread's young generation, per semi-space (0: V8's own, 16 MB).
 */
export interface WorkerHeapLimits {
  growthPercent: number;
  workflowThreadSemiSpaceMb: number;
}

/**
 * With V8's own heuristics a worker retrying thousands of webhook deliveries let its heaps
 * reach about three times their live data (a 578 MB process at 3,000 waiting deliveries);
 * with these (and the image's MALLOC_ARENA_MAX) it held 290-295 MB, and bench:webhooks saw no
 * more CPU per event than the noise between runs (docs/performance.md).
 */
export const DEFAULT_WORKER_HEAP: WorkerHeapLimits = { growthPercent: 20, workflowThreadSemiSpaceMb: 4 };

/** What a worker heap setting takes. */
const V8_OWN = "a whole number (0: V8's own)";

/**
 * The sticky cache's default size. The SDK's own default grows with the heap limit (600
 * per GiB: 2,310 on a 4 GiB heap), and each cached workflow keeps its state in the shared
 * workflow context, about 0.1-0.15 MB for a webhook delivery: with thousands of deliveries
 * waiting in retry timers that is hundreds of MB (docs/performance.md). 100 holds the
 * workflows being worked on (at most 40 workflow tasks at once, the SDK's default); a
 * workflow evicted while it waits is replayed from its short history when its timer fires.
 */
export const DEFAULT_WORKER_CACHED_WORKFLOWS = 100;

export interface RateLimit {
  points: number;
  durationSeconds: number;
}

const DURATION_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600 };

/** "600/60s", "100/1m", "5000/1h" -> { points, durationSeconds } (BERTH_RATE_LIMIT). */
export function parseRateLimit(value: string): RateLimit {
  const m = /^\s*([0-9]+)\s*\/\s*([0-9]+)\s*([smh])\s*$/.exec(value);
  const points = Number(m?.[1]);
  const durationSeconds = Number(m?.[2]) * DURATION_UNITS[m?.[3] ?? 's']!;
  if (!m || points < 1 || durationSeconds < 1) {
    throw new Error(
      `BERTH_RATE_LIMIT must read <requests>/<window> such as 600/60s, 100/1m or 5000/1h, got "${value}"`,
    );
  }
  return { points, durationSeconds };
}

export const PROVIDERS = ['local', 'simulated'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

function int(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number, got "${value}"`);
  return n;
}

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

const CIDR4 = /^(\d{1,3}\.){3}\d{1,3}(\/\d{1,2})?$/;

function cidrList(value: string, name: string): string[] {
  const items = list(value);
  for (const item of items)
    if (!CIDR4.test(item)) throw new Error(`${name}: "${item}" is not an IPv4 range or address`);
  return items;
}

/** "local=192.0.2.0/28;eu=198.51.100.8/29,198.51.100.20" -> { local: [...], eu: [...] } */
function pools(value: string, name: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const entry of value
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const i = entry.indexOf('=');
    if (i <= 0) throw new Error(`${name}: "${entry}" is not region=range[,range]`);
    out[entry.slice(0, i).trim()] = cidrList(entry.slice(i + 1), name);
  }
  return out;
}

/**
 * A DNS server as node:dns takes it: `ip`, `ip:port`, `ipv6`, `[ipv6]` or `[ipv6]:port`
 * (BERTH_DNS_SERVERS). Anything else stops the start with a clear message.
 */
export function dnsServer(entry: string): string {
  const bad = () => new Error(`BERTH_DNS_SERVERS: "${entry}" is not ip, ip:port or [ipv6]:port`);
  const port = (p: string | undefined) => {
    if (p === undefined) return;
    if (!/^[0-9]{1,5}$/.test(p) || Number(p) < 1 || Number(p) > 65535) throw bad();
  };
  const bracketed = /^\[([^\]]+)\](?::(.*))?$/.exec(entry);
  if (bracketed) {
    if (isIP(bracketed[1]!) !== 6) throw bad();
    port(bracketed[2]);
    return entry;
  }
  if (isIP(entry) !== 0) return entry;
  const [host, p, ...rest] = entry.split(':');
  if (rest.length > 0 || isIP(host!) !== 4) throw bad();
  port(p);
  return entry;
}

export type RegistrySetting =
  | { kind: 'embedded' }
  | { kind: 'off' }
  | { kind: 'external'; host: string; username: string | undefined; password: string | undefined };

function registrySetting(env: NodeJS.ProcessEnv): RegistrySetting {
  const value = env.BERTH_REGISTRY || 'embedded';
  if (value === 'embedded' || value === 'off') return { kind: value };
  if (!/^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-fA-F:]+\](:\d{1,5})?$/.test(value))
    throw new Error(`BERTH_REGISTRY: "${value}" is not embedded, off, or a registry's host[:port]`);
  return {
    kind: 'external',
    host: value,
    username: env.BERTH_REGISTRY_USERNAME || undefined,
    password: env.BERTH_REGISTRY_PASSWORD || undefined,
  };
}

function workloadNetwork(value: string | undefined): string | null {
  if (value === 'off') return null;
  const range = value || DEFAULT_WORKLOAD_RANGE;
  try {
    parseCidr(range);
  } catch (err) {
    throw new Error(`BERTH_WORKLOAD_NETWORK: ${(err as Error).message} (or off)`);
  }
  return range;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  const provider = (env.BERTH_PROVIDER || 'local') as ProviderName;
  if (!(PROVIDERS as readonly string[]).includes(provider)) {
    throw new Error(`BERTH_PROVIDER "${provider}" is not a data-plane driver; choose one of ${PROVIDERS.join(', ')}`);
  }
  const idle = int(env.BERTH_APP_IDLE_TIMEOUT_S, 1800, 'BERTH_APP_IDLE_TIMEOUT_S');
  // 443 needs root (or CAP_NET_BIND_SERVICE); a user gets the customary unprivileged 8443
  const ingressTlsPort = int(
    env.BERTH_INGRESS_TLS_PORT,
    process.getuid?.() === 0 ? 443 : 8443,
    'BERTH_INGRESS_TLS_PORT',
  );
  if (idle < 1) throw new Error('BERTH_APP_IDLE_TIMEOUT_S must be at least 1');
  const faultRate = int(env.BERTH_PROVIDER_FAULT_RATE, 0, 'BERTH_PROVIDER_FAULT_RATE');
  if (faultRate < 0 || faultRate > 1) throw new Error('BERTH_PROVIDER_FAULT_RATE must be between 0 and 1');
  parseAllowList(list(env.BERTH_WEBHOOK_ALLOW_CIDRS)); // a malformed range stops the start instead of failing every webhook request
  parseAllowList(list(env.BERTH_REGISTRY_ALLOW_CIDRS), 'BERTH_REGISTRY_ALLOW_CIDRS');
  const workloadRange = workloadNetwork(env.BERTH_WORKLOAD_NETWORK);
  return {
    databaseUrl: env.DATABASE_URL || undefined,
    temporalAddress: env.TEMPORAL_ADDRESS || undefined,
    temporalNamespace: env.TEMPORAL_NAMESPACE || 'default',
    temporalCli: env.TEMPORAL_CLI || undefined,
    temporalPort: int(env.BERTH_TEMPORAL_PORT, 7233, 'BERTH_TEMPORAL_PORT'),
    temporalUiPort: int(env.BERTH_TEMPORAL_UI_PORT, 8233, 'BERTH_TEMPORAL_UI_PORT'),
    embeddedPgPort: int(env.BERTH_PG_PORT, 5433, 'BERTH_PG_PORT'),
    taskQueue: env.BERTH_TASK_QUEUE || 'berth',
    host: env.BERTH_HOST || '127.0.0.1',
    port: int(env.PORT ?? env.BERTH_PORT, 8080, 'PORT'),
    dataDir: path.resolve(cwd, env.BERTH_DATA_DIR || '.berth'),
    secretKey: env.BERTH_SECRET_KEY || undefined,
    bootstrapToken: env.BERTH_BOOTSTRAP_TOKEN || undefined,
    logLevel: env.LOG_LEVEL || 'info',
    reconcileIntervalMs: int(env.BERTH_RECONCILE_INTERVAL_MS, 5000, 'BERTH_RECONCILE_INTERVAL_MS'),
    webhookAllowCidrs: list(env.BERTH_WEBHOOK_ALLOW_CIDRS),
    registryAllowCidrs: list(env.BERTH_REGISTRY_ALLOW_CIDRS),
    dnsServers: list(env.BERTH_DNS_SERVERS).map(dnsServer),
    smtpUrl: env.BERTH_SMTP_URL || undefined,
    mailFrom: env.BERTH_MAIL_FROM || 'Berth <berth@localhost>',
    provider,
    appsDir: env.BERTH_APPS_DIR ? path.resolve(cwd, env.BERTH_APPS_DIR) : undefined,
    appIdleTimeoutS: idle,
    providerFaultRate: faultRate,
    providerLatencyMs: int(env.BERTH_PROVIDER_LATENCY_MS, 1000, 'BERTH_PROVIDER_LATENCY_MS'),
    s3Endpoint: env.BERTH_S3_ENDPOINT || undefined,
    platformNetworks: [
      ...cidrList(env.BERTH_PLATFORM_NETWORKS ?? '10.42.0.0/16,10.43.0.0/16', 'BERTH_PLATFORM_NETWORKS'),
      // a VPC on the workload network's range would shadow the routes of workloads' own namespaces
      ...(workloadRange ? [workloadRange] : []),
    ],
    publicIpv4Pools: pools(env.BERTH_PUBLIC_IPV4_POOLS ?? 'local=192.0.2.0/28', 'BERTH_PUBLIC_IPV4_POOLS'),
    s3AccessKey: env.BERTH_S3_ACCESS_KEY || undefined,
    s3SecretKey: env.BERTH_S3_SECRET_KEY || undefined,
    s3Region: env.BERTH_S3_REGION || 'us-east-1',
    embeddedS3Port: int(env.BERTH_S3_PORT, 9000, 'BERTH_S3_PORT'),
    sitesDomain: env.BERTH_SITES_DOMAIN || 'sites.berth.localhost',
    gitAllowFileUrls: env.BERTH_GIT_ALLOW_FILE_URLS === '1' || env.BERTH_GIT_ALLOW_FILE_URLS === 'true',
    gitCaFile: env.BERTH_GIT_CA_FILE || undefined,
    simIngressPort: int(env.BERTH_SIM_INGRESS_PORT, 8081, 'BERTH_SIM_INGRESS_PORT'),
    ingressPort: int(env.BERTH_INGRESS_PORT, 8081, 'BERTH_INGRESS_PORT'),
    ingressTlsPort,
    workloadNetwork: workloadRange,
    registry: registrySetting(env),
    publicHttpsPort: int(
      env.BERTH_PUBLIC_HTTPS_PORT,
      provider === 'local' && ingressTlsPort > 0 ? ingressTlsPort : 443,
      'BERTH_PUBLIC_HTTPS_PORT',
    ),
    acmeDirectory: env.BERTH_ACME_DIRECTORY || undefined,
    acmeEmail: env.BERTH_ACME_EMAIL || undefined,
    acmeCaFile: env.BERTH_ACME_CA_FILE ? path.resolve(cwd, env.BERTH_ACME_CA_FILE) : undefined,
    publicUrl: publicOrigin(
      env.BERTH_PUBLIC_URL,
      env.BERTH_HOST || '127.0.0.1',
      int(env.PORT ?? env.BERTH_PORT, 8080, 'PORT'),
    ),
    valkeyServer: env.BERTH_VALKEY_SERVER || undefined,
    mysqlServer: env.BERTH_MYSQL_SERVER || undefined,
    rateLimit: parseRateLimit(env.BERTH_RATE_LIMIT || '600/60s'),
    workflowBundle: env.BERTH_WORKFLOW_BUNDLE ? path.resolve(cwd, env.BERTH_WORKFLOW_BUNDLE) : undefined,
    workerCachedWorkflows: cachedWorkflows(env.BERTH_WORKER_CACHED_WORKFLOWS),
    workerHeap: {
      growthPercent: wholeNumber(
        env.BERTH_WORKER_HEAP_GROWTH_PERCENT,
        DEFAULT_WORKER_HEAP.growthPercent,
        'BERTH_WORKER_HEAP_GROWTH_PERCENT',
        V8_OWN,
      ),
      workflowThreadSemiSpaceMb: wholeNumber(
        env.BERTH_WORKFLOW_THREAD_SEMI_SPACE_MB,
        DEFAULT_WORKER_HEAP.workflowThreadSemiSpaceMb,
        'BERTH_WORKFLOW_THREAD_SEMI_SPACE_MB',
        V8_OWN,
      ),
    },
  };
}

/** BERTH_WORKER_CACHED_WORKFLOWS: 0 (no cache) or a whole number of at least 2 (the SDK's floor). */
function cachedWorkflows(value: string | undefined): number {
  return wholeNumber(
    value,
    DEFAULT_WORKER_CACHED_WORKFLOWS,
    'BERTH_WORKER_CACHED_WORKFLOWS',
    '0 (no cache) or a whole number of at least 2',
    (n) => n !== 1,
  );
}

/** A whole number of 0 or more that `allowed` takes; `expected` says in the error what is. */
function wholeNumber(
  value: string | undefined,
  fallback: number,
  name: string,
  expected: string,
  allowed: (n: number) => boolean = () => true,
): number {
  const n = int(value, fallback, name);
  if (!Number.isInteger(n) || n < 0 || !allowed(n)) throw new Error(`${name} must be ${expected}, got "${value}"`);
  return n;
}

/** BERTH_PUBLIC_URL as an origin (`http(s)://host[:port][/prefix]`, no trailing slash); by default where the API listens. */
function publicOrigin(value: string | undefined, host: string, port: number): string {
  if (!value) {
    const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : isIP(host) === 6 ? `[${host}]` : host;
    return `http://${shown}:${port}`;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`BERTH_PUBLIC_URL must be an http(s) URL, got "${value}"`);
  }
  if (!['http:', 'https:'].includes(url.protocol) || url.search || url.hash || url.username) {
    throw new Error(`BERTH_PUBLIC_URL must be an http(s) URL without credentials, query or fragment, got "${value}"`);
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}
