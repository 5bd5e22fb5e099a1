/**
 * `npm run bench:temporal-memory`: the Temporal dev server's memory (PSS) per 1,000
 * workflows run, with the dynamic config Berth starts it with (bin/temporal-server.ts
 * DEV_SERVER_DYNAMIC_CONFIG: bounded caches; DEV_SERVER_GO_ENV: Go's heap goal and soft limit)
 * against the CLI's and Go's defaults, two servers side by
 * side on their own SQLite files, the same load on each. Each workflow runs one no-op
 * activity; the growth is the least-squares slope of PSS over workflows completed, after the
 * first third (start-up and warm-up) is left out. Goal: bounded/default < 0.5.
 *
 * BENCH_N (default 3000) workflows per server, BENCH_RATE (default 20) started per second.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { descendants } from '../bin/lifecycle';
import { processMemory } from '../chaos/memory';
import { devServerProcess } from '../chaos/processes';
import { resolveTemporal } from '../bin/temporal-cli';
import { startTemporalDevServer, type TemporalDevServer } from '../bin/temporal-server';
import { freePort } from '../test/support/ports';
import { TOOLS_DATA_DIR } from '../test/support/env';

const N = Number(process.env.BENCH_N ?? 3000);
const RATE = Number(process.env.BENCH_RATE ?? 20);
const TASK_QUEUE = 'bench-temporal-memory';

interface Server {
  name: string;
  dev: TemporalDevServer;
  pid: number;
  client: Client;
  worker: Worker;
  running: Promise<void>;
  done: number;
  samples: Array<{ done: number; mb: number }>;
}

/** The dev server's PSS in MB (0 once gone). */
function pssMb(pid: number): number {
  return processMemory(pid)?.pssMb ?? 0;
}

async function start(
  name: string,
  dir: string,
  dynamicConfig?: Readonly<Record<string, string | number | boolean>>,
  goEnv?: Readonly<Record<string, string>>,
): Promise<Server> {
  const port = await freePort();
  const dev = await startTemporalDevServer({
    executable: resolveTemporal('cli', { dataDir: TOOLS_DATA_DIR }),
    port,
    dbFilename: path.join(dir, `${name}.db`),
    dynamicConfig,
    goEnv,
  });
  const client = new Client({ connection: await Connection.connect({ address: dev.address }) });
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: dev.address }),
    taskQueue: TASK_QUEUE,
    workflowsPath: path.join(__dirname, 'webhooks', 'workflows.ts'),
    activities: { benchNoop: async () => {} },
  });
  return {
    name,
    dev,
    pid: devServerProcess(port, descendants(process.pid)).pid,
    client,
    worker,
    running: worker.run(),
    done: 0,
    samples: [],
  };
}

/** Starts N workflows at RATE a second (at most 50 in flight) and waits for them all. */
async function load(server: Server, t0: number): Promise<void> {
  const inflight = new Set<Promise<void>>();
  for (let i = 0; i < N; i++) {
    const wait = t0 + (i * 1000) / RATE - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const run: Promise<void> = server.client.workflow
      .execute('benchOneNoopActivity', { taskQueue: TASK_QUEUE, workflowId: `noop-${i}`, args: [] })
      .then(() => {
        server.done++;
      })
      .finally(() => inflight.delete(run));
    inflight.add(run);
    if (inflight.size >= 50) await Promise.race(inflight);
  }
  await Promise.all(inflight);
}

/** MB per 1,000 workflows: least-squares slope of PSS over workflows done, last two thirds. */
function growthPer1000(samples: Server['samples']): number {
  const kept = samples.filter((s) => s.done >= N / 3);
  const mx = kept.reduce((a, s) => a + s.done, 0) / kept.length;
  const my = kept.reduce((a, s) => a + s.mb, 0) / kept.length;
  const sxy = kept.reduce((a, s) => a + (s.done - mx) * (s.mb - my), 0);
  const sxx = kept.reduce((a, s) => a + (s.done - mx) ** 2, 0);
  return sxx > 0 ? (sxy / sxx) * 1000 : NaN;
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const dir = mkdtempSync(path.join(tmpdir(), 'berth-bench-temporal-'));
  const servers: Server[] = [];
  try {
    servers.push(await start('default', dir, {}, {}));
    servers.push(await start('bounded', dir));
    const t0 = Date.now();
    const sample = () => {
      for (const s of servers) s.samples.push({ done: s.done, mb: pssMb(s.pid) });
      const line = servers.map((s) => `${s.name} ${s.done} wf ${s.samples.at(-1)!.mb.toFixed(0)} MB`).join(', ');
      process.stdout.write(`${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s: ${line}\n`);
    };
    sample();
    const timer = setInterval(sample, 10_000);
    await Promise.all(servers.map((s) => load(s, t0)));
    clearInterval(timer);
    sample();
    const [def, bounded] = servers.map((s) => growthPer1000(s.samples)) as [number, number];
    process.stdout.write(
      `growth per 1,000 workflows: default ${def.toFixed(1)} MB, bounded ${bounded.toFixed(1)} MB\n` +
        `ratio bounded/default ${(bounded / def).toFixed(2)}\n`,
    );
  } finally {
    for (const s of servers) {
      s.worker.shutdown();
      await s.running.catch(() => undefined);
      await s.dev.stop();
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
