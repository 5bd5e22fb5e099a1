/**
 * `npm run bench:ingress`: requests per second of a real Node HTTP app (a process of its
 * own, bench/ingress/app.ts) reached straight and through the local ingress (routing by
 * Host, settings from PostgreSQL through its cache, round-robin, X-Forwarded-*, traffic
 * signals), measured in the same run. Load comes from a separate process
 * (bench/load.ts) so the ingress process measured does only the ingress's work.
 * Rounds alternate straight and through, after a warm-up of each; each round's ratio pairs
 * two measurements taken seconds apart, so a change in the machine's load hits both. It
 * also prints the CPU each process spent per request (load generator, app, ingress): on a
 * shared machine that says more than requests per second. Each round also measures the
 * same requests over HTTPS through the ingress (TLS 1.3, HTTP/1.1 keep-alive, the local CA's
 * certificate chosen by SNI). Goals: through/straight >= 0.7 for HTTP; HTTPS/HTTP through
 * the ingress >= 0.8.
 *
 * Options (env): BENCH_SECONDS (per round, default 5), BENCH_ROUNDS (default 5), BENCH_CONCURRENCY (default 16),
 * BENCH_APP_WORK_MS (CPU the app spends per request, default 0: the proxy's worst case),
 * DATABASE_URL (else an embedded PostgreSQL).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { startLocalIngress } from '../activities/provider/local/ingress/ingress';
import { IngressCertificates } from '../activities/provider/local/ingress/tls/certificates';
import { openLocalCa } from '../activities/provider/local/ingress/tls/local-ca';
import { SecretBox } from '../domain/secret-box';
import { createWorkspace } from '../bin/bootstrap';
import { createLogger } from '../platform/logger';
import { benchDatabase, benchResource, freePort } from './database';
import { fabricUnavailable, WorkloadNetwork } from '../activities/provider/local/network/fabric';
import { DEFAULT_WORKLOAD_RANGE } from '../platform/workload-addresses';
import { loadFromProcess } from './load-process';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const TSX = path.join(__dirname, '..', 'node_modules', '.bin', 'tsx');
const GOAL = 0.7;
const TLS_GOAL = 0.8;
const APP_WORK_MS = Number(process.env.BENCH_APP_WORK_MS ?? 0);

function run(file: string, args: string[], env: NodeJS.ProcessEnv = {}, netnsPath?: string): ChildProcess {
  const argv = [TSX, path.join(__dirname, 'ingress', file), ...args];
  // inside a workload's network namespace, as the local driver runs a replica
  const command = netnsPath ? ['/usr/bin/nsenter', `--net=${netnsPath}`, '--', ...argv] : argv;
  return spawn(command[0]!, command.slice(1), {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

/**
 * The app's place: a namespace of the workload network, as the local driver gives every
 * replica (when the machine has it; BENCH_NETNS=0: the machine's loopback, as before).
 */
async function appNetwork(): Promise<{ host: string; netnsPath?: string; close(): Promise<void> }> {
  const loopback = { host: '127.0.0.1', close: async () => {} };
  if (process.env.BENCH_NETNS === '0' || (await fabricUnavailable())) return loopback;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'berth-bench-net-'));
  const net = await WorkloadNetwork.open({ dataDir, range: DEFAULT_WORKLOAD_RANGE, logger: createLogger('error') });
  const place = await net.attach('bench-ingress-app', {
    workspace: 'bench',
    app: 'bench',
    allowConnections: false,
    clusters: [],
    serviceName: null,
  });
  return {
    host: place.address,
    netnsPath: place.netnsPath,
    close: async () => {
      await net.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.once('exit', (code) => reject(new Error(`${child.spawnargs.join(' ')} exited ${code} before answering`)));
  });
}

interface Round {
  rps: number;
  loadUs: number;
  appUs: number;
  ingressUs: number;
}

/** The CPU microseconds the app process has used so far. */
async function appCpu(appUrl: string): Promise<number> {
  return Number(await (await fetch(`${appUrl}__cpu`)).text());
}

/** One round of load from its own process: requests per second, and each process's CPU per request. */
async function load(url: string, host: string, seconds: number, appUrl: string, caFile?: string): Promise<Round> {
  const app0 = await appCpu(appUrl);
  const own0 = process.cpuUsage();
  const result = await loadFromProcess(url, { host }, seconds, CONCURRENCY, caFile);
  const own = process.cpuUsage(own0);
  const app = (await appCpu(appUrl)) - app0;
  if (result.bad > 0) throw new Error(`${result.bad} requests to ${url} (Host ${host}) did not answer 200`);
  const per = (us: number) => us / Math.max(1, result.ok);
  return { rps: result.rps, loadUs: per(result.cpuUs), appUs: per(app), ingressUs: per(own.user + own.system) };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function main(): Promise<void> {
  const db = await benchDatabase();
  const appUuid = randomUUID();
  const name = `bench-${randomUUID().slice(0, 6)}`;
  const plainHost = `${name}.example.test`;
  await db.ds.transaction(async (m) => {
    const ws = await createWorkspace(m, `bench-${randomUUID().slice(0, 8)}`);
    const resource = await benchResource(m, ws);
    await m.query(
      `INSERT INTO apps (uuid, workspace_uuid, resource_uuid, name, service_name, label, state) VALUES ($1, $2, $3, $4, 'bench', 'Bench', 'running')`,
      [appUuid, ws, resource, name],
    );
    // plain HTTP to the app's own host is redirected to HTTPS; this custom domain (no certificate) is served over HTTP
    await m.query(
      `INSERT INTO domains (uuid, workspace_uuid, app_uuid, name, verification_status, dns_target) VALUES ($1, $2, $3, $4, 'verified', $5)`,
      [randomUUID(), ws, appUuid, plainHost, `${name}.bench.localhost`],
    );
  });

  const place = await appNetwork();
  const appPort = place.netnsPath ? 8080 : await freePort();
  const app = run(
    'app.ts',
    [],
    { PORT: String(appPort), HOST: place.netnsPath ? '0.0.0.0' : '127.0.0.1', WORK_MS: String(APP_WORK_MS) },
    place.netnsPath,
  );
  await firstLine(app);
  const logger = createLogger('error');
  const secretBox = new SecretBox([{ kid: 'bench', key: Buffer.alloc(32, 7) }]);
  const caDir = mkdtempSync(path.join(tmpdir(), 'berth-bench-ca-'));
  const ca = await openLocalCa(caDir, secretBox);
  const ingress = await startLocalIngress({
    dataSource: db.ds,
    secretBox,
    logger,
    port: 0,
    events: { health: async () => undefined, liveStatus: async () => undefined, traffic: async () => undefined },
    tls: { port: 0, certificates: new IngressCertificates(db.ds, secretBox, ca) },
  });
  ingress.routes.setBackends(appUuid, [{ kind: 'process', host: place.host, port: appPort }]);

  const straight = `http://${place.host}:${appPort}/`;
  const through = `${ingress.url}/`;
  const throughTls = `${ingress.tlsUrl}/`;
  const host = `${name}.bench.localhost`;
  const out = (text: string) => process.stdout.write(`${text}\n`);
  out(`the app: ${place.netnsPath ? `in a workload namespace of its own, at ${place.host}` : 'on loopback'}`);
  const us = (n: number) => n.toFixed(0).padStart(4);
  try {
    await load(straight, host, 2, straight);
    await load(through, plainHost, 2, straight);
    await load(throughTls, host, 2, straight, ca.rootPath);
    out(
      `GET / of a Node HTTP app (${APP_WORK_MS} ms of CPU per request), ${CONCURRENCY} concurrent keep-alive clients from another process, ${ROUNDS} rounds of ${SECONDS} s each way`,
    );
    out('CPU us per request of each process: gen = load generator; HTTPS: HTTP/1.1 over TLS through the ingress');
    out(
      'round  straight req/s  through req/s  ratio  HTTPS req/s  HTTPS/HTTP  load avg | straight: gen  app | through: gen  app  ingress | HTTPS: gen  ingress',
    );
    const rounds: Array<{ straight: Round; through: Round; tls: Round }> = [];
    for (let i = 0; i < ROUNDS; i++) {
      const r = {
        straight: await load(straight, host, SECONDS, straight),
        through: await load(through, plainHost, SECONDS, straight),
        tls: await load(throughTls, host, SECONDS, straight, ca.rootPath),
      };
      rounds.push(r);
      out(
        `${String(i + 1).padStart(5)}  ${r.straight.rps.toFixed(0).padStart(14)}  ${r.through.rps.toFixed(0).padStart(13)}  ${(r.through.rps / r.straight.rps).toFixed(2).padStart(5)}  ` +
          `${r.tls.rps.toFixed(0).padStart(11)}  ${(r.tls.rps / r.through.rps).toFixed(2).padStart(10)}  ` +
          `${loadavg()[0]!.toFixed(1).padStart(8)} |       ${us(r.straight.loadUs)} ${us(r.straight.appUs)} |      ${us(r.through.loadUs)} ${us(r.through.appUs)} ${us(r.through.ingressUs).padStart(8)} |    ${us(r.tls.loadUs)} ${us(r.tls.ingressUs).padStart(8)}`,
      );
    }
    const best = {
      straight: Math.max(...rounds.map((r) => r.straight.rps)),
      through: Math.max(...rounds.map((r) => r.through.rps)),
      tls: Math.max(...rounds.map((r) => r.tls.rps)),
    };
    const ratio = best.through / best.straight;
    const tlsRatio = best.tls / best.through;
    out(
      `best: straight ${best.straight.toFixed(0)} req/s, through the local ingress ${best.through.toFixed(0)} req/s, over HTTPS ${best.tls.toFixed(0)} req/s`,
    );
    out(`median of the rounds' ratios: ${median(rounds.map((r) => r.through.rps / r.straight.rps)).toFixed(2)}`);
    out(`median of the rounds' HTTPS/HTTP ratios: ${median(rounds.map((r) => r.tls.rps / r.through.rps)).toFixed(2)}`);
    out(
      `ratio ingress/straight (best of each): ${ratio.toFixed(2)} (goal >= ${GOAL}: ${ratio >= GOAL ? 'met' : 'NOT met'})`,
    );
    out(
      `ratio HTTPS/HTTP through the ingress (best of each): ${tlsRatio.toFixed(2)} (goal >= ${TLS_GOAL}: ${tlsRatio >= TLS_GOAL ? 'met' : 'NOT met'})`,
    );
  } finally {
    await ingress.close();
    rmSync(caDir, { recursive: true, force: true });
    app.kill('SIGTERM');
    await place.close().catch(() => {});
    await db.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench:ingress failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
