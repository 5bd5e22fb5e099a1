/**
 * `npm run bench:api`: requests per second of GET /api/v1/apps/{uuid} through the whole
 * API (bearer auth, permission check, project restriction check, the App view with its
 * platform and region), as a ratio to a bare Koa + pg handler reading the same app row,
 * measured in the same run on the same PostgreSQL. Loopback only, bounded in time.
 *
 * Options (env): BENCH_SECONDS (per round, default 4), BENCH_CONCURRENCY (default 16),
 * DATABASE_URL (else an embedded PostgreSQL in a temp dir).
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { Client, Connection } from '@temporalio/client';
import Koa from 'koa';
import { Pool } from 'pg';
import { request } from 'undici';
import { createApp } from '../api/app';
import { addMember, createRole, createWorkspace, DEFAULT_PLAN, issueToken } from '../bin/bootstrap';
import { SecretBox } from '../domain/secret-box';
import { loadConfig } from '../platform/config';
import { createLogger } from '../platform/logger';
import { Outbox } from '../platform/outbox';
import { benchDatabase } from './database';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);

async function listen(app: Koa): Promise<{ server: Server; url: string }> {
  const server = await new Promise<Server>((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

/** Closed-loop load: CONCURRENCY clients each send the next request when the last one answered. */
async function load(url: string, headers: Record<string, string>, seconds: number): Promise<number> {
  const deadline = Date.now() + seconds * 1000;
  let ok = 0;
  let bad = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (Date.now() < deadline) {
      const res = await request(url, { headers });
      await res.body.text();
      if (res.statusCode === 200) ok++;
      else bad++;
    }
  }));
  if (bad > 0) throw new Error(`${bad} requests to ${url} did not answer 200`);
  return ok / seconds;
}

async function main(): Promise<void> {
  const { ds, url, stop } = await benchDatabase();

  // A workspace, a member with a custom role (so the project-restriction check runs), an app in a project.
  const appUuid = randomUUID();
  const { token } = await ds.transaction(async (m) => {
    const ws = await createWorkspace(m, `bench-${randomUUID().slice(0, 8)}`);
    await createRole(m, ws, 'viewer', ['apps:view']);
    const member = await addMember(m, ws, `bench-${randomUUID().slice(0, 8)}@example.test`, 'viewer');
    const [region] = await m.query(`INSERT INTO regions (name, code, domain) VALUES ('Bench', $1, 'bench.localhost') RETURNING id`, [`bench-${randomUUID().slice(0, 6)}`]);
    const resource = randomUUID();
    await m.query(`INSERT INTO compute_resources (uuid, workspace_uuid, region_id, name, total_cpu_size, total_ram_size, total_disk_size, plan)
                   VALUES ($1, $2, $3, 'bench', 8, $4, $5, $6)`, [resource, ws, region.id, 16 * 2 ** 30, 100 * 2 ** 30, JSON.stringify(DEFAULT_PLAN)]);
    const project = randomUUID();
    await m.query(`INSERT INTO projects (uuid, workspace_uuid, name) VALUES ($1, $2, 'bench')`, [project, ws]);
    await m.query(`INSERT INTO project_restrictions (project_uuid, subject_type, role_name) VALUES ($1, 'role', 'viewer')`, [project]);
    await m.query(`INSERT INTO apps (uuid, workspace_uuid, project_id, resource_uuid, name, service_name, label, state) VALUES ($1, $2, $3, $4, 'bench-abc123', 'bench', 'Bench', 'running')`,
      [appUuid, ws, project, resource]);
    await m.query(`INSERT INTO resource_allocations (owner_uuid, owner_type, resource_uuid, cpu_size, ram_size, disk_size) VALUES ($1, 'app', $2, 0.25, 268435456, 1073741824)`, [appUuid, resource]);
    return issueToken(m, { workspaceUuid: ws, memberUuid: member.memberUuid, name: 'bench' });
  });

  const logger = createLogger('error');
  const config = { ...loadConfig({ BERTH_RATE_LIMIT: '1000000000/1h' }), databaseUrl: url }; // the limiter stays on the path, never refusing
  // GET never reaches Temporal; a lazy client to nowhere is enough.
  const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
  const berth = await listen(createApp({ dataSource: ds, temporal, outbox: new Outbox(ds, temporal, { taskQueue: 'bench', logger }),
    secretBox: new SecretBox([{ kid: 'bench', key: Buffer.alloc(32, 7) }]), logger, config }));

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
  if (check.statusCode !== 200 || body.uuid !== appUuid) throw new Error(`GET ${berthUrl} answered ${check.statusCode}`);

  await load(baseUrl, {}, 1);
  await load(berthUrl, headers, 1);
  const rounds: Array<{ berth: number; bare: number }> = [];
  for (let i = 0; i < 2; i++) rounds.push({ bare: await load(baseUrl, {}, SECONDS), berth: await load(berthUrl, headers, SECONDS) });
  const best = { berth: Math.max(...rounds.map((r) => r.berth)), bare: Math.max(...rounds.map((r) => r.bare)) };
  const line = (name: string, rps: number) => process.stdout.write(`${name.padEnd(44)} ${rps.toFixed(0).padStart(8)} req/s\n`);
  process.stdout.write(`GET /apps/{uuid}, ${CONCURRENCY} concurrent clients, best of ${rounds.length} x ${SECONDS} s\n`);
  line('bare Koa + pg (SELECT * FROM apps)', best.bare);
  line('Berth (auth, permission, project, App view)', best.berth);
  process.stdout.write(`ratio berth/bare: ${(best.berth / best.bare).toFixed(2)}\n`);

  await new Promise<void>((r) => berth.server.close(() => r()));
  await new Promise<void>((r) => baseline.server.close(() => r()));
  await pool.end();
  await stop();
}

main().then(() => process.exit(0), (err) => {
  process.stderr.write(`bench:api failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
