/**
 * `npm run bench:api`: requests per second of GET /api/v1/apps/{uuid} through the whole
 * API (bearer auth, permission check, project restriction check, the App view with its
 * platform and region), as a ratio to a bare Koa + pg handler reading the same app row,
 * measured in the same run on the same PostgreSQL. Loopback only, bounded in time. The load
 * comes from a process of its own (bench/load.ts), so the ratio is the servers'; rounds
 * alternate bare and Berth, each round's ratio pairs two measurements seconds apart, and the
 * last line is the median of the rounds' ratios. Each side's CPU per request (this process,
 * both servers) is printed too: on a shared machine it says more than requests per second.
 *
 * Options (env): BENCH_SECONDS (per round, default 4), BENCH_ROUNDS (default 3), BENCH_CONCURRENCY (default 16),
 * DATABASE_URL (else an embedded PostgreSQL in a temp dir), BENCH_CPU_PROFILE (a file: a
 * CPU profile of this process during one more round of Berth alone, for docs/performance.md).
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { Session } from 'node:inspector/promises';
import type { Server } from 'node:http';
import { Client, Connection } from '@temporalio/client';
import Koa from 'koa';
import { Pool } from 'pg';
import { request } from 'undici';
import { createApp } from '../api/app';
import type { TokenRow } from '../api/middleware/auth';
import { TokenCache } from '../api/middleware/token-cache';
import { addMember, createRole, createWorkspace, issueToken } from '../bin/bootstrap';
import { SecretBox } from '../domain/secret-box';
import { loadConfig } from '../platform/config';
import { createLogger } from '../platform/logger';
import { Outbox } from '../platform/outbox';
import { benchDatabase, benchResource } from './database';
import { loadFromProcess } from './load-process';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

async function listen(app: Koa): Promise<{ server: Server; url: string }> {
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

interface Round {
  rps: number;
  serverUs: number;
}

/** One round from the load generator's own process: requests per second and this process's CPU per request. */
async function load(url: string, headers: Record<string, string>, seconds: number): Promise<Round> {
  const own0 = process.cpuUsage();
  const result = await loadFromProcess(url, headers, seconds, CONCURRENCY);
  const own = process.cpuUsage(own0);
  if (result.bad > 0) throw new Error(`${result.bad} requests to ${url} did not answer 200`);
  return { rps: result.rps, serverUs: (own.user + own.system) / Math.max(1, result.ok) };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A CPU profile of this process while `work` runs, written to `file` (open it in Chrome DevTools or speedscope). */
async function profiled(file: string, work: () => Promise<unknown>): Promise<void> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  await work();
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(file, JSON.stringify(profile));
  session.disconnect();
  process.stdout.write(`CPU profile of one Berth round written to ${file}\n`);
}

async function main(): Promise<void> {
  const { ds, url, stop } = await benchDatabase();

  // A workspace, a member with a custom role (so the project-restriction check runs), an app in a project.
  const appUuid = randomUUID();
  const { token } = await ds.transaction(async (m) => {
    const ws = await createWorkspace(m, `bench-${randomUUID().slice(0, 8)}`);
    await createRole(m, ws, 'viewer', ['apps:view']);
    const member = await addMember(m, ws, `bench-${randomUUID().slice(0, 8)}@example.test`, 'viewer');
    const resource = await benchResource(m, ws);
    const project = randomUUID();
    await m.query(`INSERT INTO projects (uuid, workspace_uuid, name) VALUES ($1, $2, 'bench')`, [project, ws]);
    await m.query(
      `INSERT INTO project_restrictions (project_uuid, subject_type, role_name) VALUES ($1, 'role', 'viewer')`,
      [project],
    );
    await m.query(
      `INSERT INTO apps (uuid, workspace_uuid, project_uuid, resource_uuid, name, service_name, label, state) VALUES ($1, $2, $3, $4, 'bench-abc123', 'bench', 'Bench', 'running')`,
      [appUuid, ws, project, resource],
    );
    await m.query(
      `INSERT INTO resource_allocations (owner_uuid, owner_type, resource_uuid, cpu_size, ram_size, disk_size) VALUES ($1, 'app', $2, 0.25, 268435456, 1073741824)`,
      [appUuid, resource],
    );
    return issueToken(m, { workspaceUuid: ws, memberUuid: member.memberUuid, name: 'bench' });
  });

  const logger = createLogger('error');
  const config = { ...loadConfig({ BERTH_RATE_LIMIT: '1000000000/1h' }), databaseUrl: url }; // the limiter stays on the path, never refusing
  // GET never reaches Temporal; a lazy client to nowhere is enough.
  const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
  const tokenCache = new TokenCache<TokenRow>(url, logger);
  const berth = await listen(
    createApp({
      dataSource: ds,
      temporal,
      tokenCache,
      outbox: new Outbox(ds, temporal, { taskQueue: 'bench', logger }),
      secretBox: new SecretBox([{ kid: 'bench', key: Buffer.alloc(32, 7) }]),
      logger,
      config,
    }),
  );

  const pool = new Pool({ connectionString: url, max: 10 });
  pool.on('error', () => {});
  const bare = new Koa();
  bare.use(async (ctx) => {
    const { rows } = await pool.query(`SELECT * FROM apps WHERE uuid = $1`, [ctx.path.split('/').pop()]);
    ctx.body = rows[0];
  });
  const baseline = await listen(bare);

  const berthUrl = `${berth.url}/api/v1/apps/${appUuid}`;
  const baseUrl = `${baseline.url}/apps/${appUuid}`;
  const headers = { authorization: `Bearer ${token}` };
  const check = await request(berthUrl, { headers });
  const body = (await check.body.json()) as { uuid?: string };
  if (check.statusCode !== 200 || body.uuid !== appUuid)
    throw new Error(`GET ${berthUrl} answered ${check.statusCode}`);

  await load(baseUrl, {}, 2); // warm-up each way (JIT, pools, the token cache's LISTEN)
  await load(berthUrl, headers, 2);
  const rounds: Array<{ berth: Round; bare: Round; load: number }> = [];
  for (let i = 0; i < ROUNDS; i++) {
    const bareRound = await load(baseUrl, {}, SECONDS);
    rounds.push({ bare: bareRound, berth: await load(berthUrl, headers, SECONDS), load: loadavg()[0]! });
  }
  const fmt = (n: number) => n.toFixed(0).padStart(6);
  process.stdout.write(
    `GET /apps/{uuid}, ${CONCURRENCY} concurrent clients from a process of their own, ${ROUNDS} x ${SECONDS} s per side\n`,
  );
  process.stdout.write('round   bare req/s (us CPU/req)   Berth req/s (us CPU/req)   ratio   load avg\n');
  rounds.forEach((r, i) =>
    process.stdout.write(
      `${String(i + 1).padStart(5)}   ${fmt(r.bare.rps)} (${fmt(r.bare.serverUs)})          ${fmt(r.berth.rps)} (${fmt(r.berth.serverUs)})          ${(r.berth.rps / r.bare.rps).toFixed(2)}   ${r.load.toFixed(1)}\n`,
    ),
  );
  const bestRatio = Math.max(...rounds.map((r) => r.berth.rps)) / Math.max(...rounds.map((r) => r.bare.rps));
  process.stdout.write(`best of each: ${bestRatio.toFixed(2)}\n`);
  process.stdout.write(
    `bench:api GET /apps/{uuid} Berth/bare: ${median(rounds.map((r) => r.berth.rps / r.bare.rps)).toFixed(2)} (median of ${ROUNDS} rounds; goal >= 0.6)\n`,
  );

  if (process.env.BENCH_CPU_PROFILE)
    await profiled(process.env.BENCH_CPU_PROFILE, () => load(berthUrl, headers, SECONDS));

  await new Promise<void>((r) => berth.server.close(() => r()));
  await new Promise<void>((r) => baseline.server.close(() => r()));
  await pool.end();
  await tokenCache.close();
  await stop();
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench:api failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
