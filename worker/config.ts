import path from 'node:path';

/**
 * The one typed configuration module. Only bin/ and worker/ read process.env;
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
  dnsServers: string[];
  smtpUrl: string | undefined;
  mailFrom: string;
  provider: 'simulated';
  providerFaultRate: number;
  providerLatencyMs: number;
  s3Endpoint: string | undefined;
  /** Lets app repositories be file:// URLs (tests and local demos; never in production). */
  gitAllowFileUrls: boolean;
  /** Port of the simulated ingress `berth dev` runs (0: none). */
  simIngressPort: number;
}

function int(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number, got "${value}"`);
  return n;
}

function list(value: string | undefined): string[] {
  return (value ?? '').split(',').map((s) => s.trim()).filter(Boolean);
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  const provider = env.BERTH_PROVIDER ?? 'simulated';
  if (provider !== 'simulated') {
    throw new Error(`BERTH_PROVIDER "${provider}" is not available; the only data-plane driver is "simulated"`);
  }
  const faultRate = int(env.BERTH_PROVIDER_FAULT_RATE, 0, 'BERTH_PROVIDER_FAULT_RATE');
  if (faultRate < 0 || faultRate > 1) throw new Error('BERTH_PROVIDER_FAULT_RATE must be between 0 and 1');
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
    dnsServers: list(env.BERTH_DNS_SERVERS),
    smtpUrl: env.BERTH_SMTP_URL || undefined,
    mailFrom: env.BERTH_MAIL_FROM || 'Berth <berth@localhost>',
    provider,
    providerFaultRate: faultRate,
    providerLatencyMs: int(env.BERTH_PROVIDER_LATENCY_MS, 1000, 'BERTH_PROVIDER_LATENCY_MS'),
    s3Endpoint: env.BERTH_S3_ENDPOINT || undefined,
    gitAllowFileUrls: env.BERTH_GIT_ALLOW_FILE_URLS === '1' || env.BERTH_GIT_ALLOW_FILE_URLS === 'true',
    simIngressPort: int(env.BERTH_SIM_INGRESS_PORT, 8081, 'BERTH_SIM_INGRESS_PORT'),
  };
}
