/**
 * `npm run bench:webhooks:waiting` (and the second half of `npm run bench:webhooks`):
 * BENCH_WAITING_N (default 10,000) webhook deliveries waiting in their retry timers
 * (issue 17: the worker's RSS <= 300 MB; the API's p99 unchanged).
 *
 * A real stack whose Temporal is the suite's dev server (in memory; time is real, nothing
 * skipped: a file-backed one could not keep up on a loaded 2-core machine), `berth
 * worker` and `berth api` each in a process of their own, compiled as the image runs them
 * (`npm run build` first; the worker's memory is its own, read from /proc), a receiver that answers every delivery 500.
 * The worker and the Temporal server weigh on the cores as docker-compose.yml weighs them
 * (chaos/background-cpu.ts: cgroup v1 cpu.shares, as Docker applies `cpu_shares`; the run says
 * when it could not). BENCH_BACKGROUND_CPUS (a cpuset list, e.g. "1") also confines both to
 * those cores, as a deployment that gives the API cores of its own would. BENCH_WAITING_WEBHOOKS
 * (default 10) webhooks subscribe to quota_alert and N / webhooks events are emitted
 * through emitEvent (one delivery workflow per webhook and event). A fixed-rate GET
 * /api/v1/webhooks from a process of its own (BENCH_API_RATE per second, default 20) is
 * timed before any delivery exists (baseline, BENCH_BASELINE_S, default 60) and once every
 * delivery has failed its first attempt and waits (BENCH_WAITING_S, default 120); the
 * worker's RSS and PSS are sampled every 10 s throughout. The run stops by itself.
 * BENCH_WORKER_NODE_OPTIONS: NODE_OPTIONS for the worker process alone.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { emitEvents } from '../../chaos/common';
import { backgroundCpu } from '../../chaos/background-cpu';
import { processMemory } from '../../chaos/memory';
import { devServerProcess } from '../../chaos/processes';
import { buildBerth, spawnBerth, type BerthProcess } from '../../chaos/worker-process';
import { SecretBox } from '../../domain/secret-box';
import { WEBHOOK_DELIVERY_WORKFLOW } from '../../domain/webhooks';
import { one } from '../../entities/sql';
import { seedWorkspace } from '../../test/support/fixtures';
import globalSetup from '../../test/support/global-setup';
import { freePort } from '../../test/support/ports';
import globalTeardown from '../../test/support/global-teardown';
import { startStack, type TestStack } from '../../test/support/stack';
import { RECEIVER_ALLOW, startReceiver } from '../../test/support/webhooks';
import { pacedLoadFromProcess, type PacedLoadResult } from '../load-process';

const N = Number(process.env.BENCH_WAITING_N ?? 10_000);
const WEBHOOKS = Number(process.env.BENCH_WAITING_WEBHOOKS ?? 10);
const RATE = Number(process.env.BENCH_API_RATE ?? 20);
const BASELINE_S = Number(process.env.BENCH_BASELINE_S ?? 60);
const WAITING_S = Number(process.env.BENCH_WAITING_S ?? 120);
/** Creating the deliveries (emits and first attempts) must end within this, or the run fails. */
const CREATE_LIMIT_MS = Number(process.env.BENCH_CREATE_LIMIT_S ?? 2700) * 1000;
const SAMPLE_MS = 10_000;
const RSS_GOAL_MB = 300;

interface Sample {
  phase: string;
  at: number;
  rssMb: number;
  pssMb: number;
}

/** Samples the worker process's memory every SAMPLE_MS, each sample tagged with the current phase. */
function memorySampler(pid: number) {
  const samples: Sample[] = [];
  const started = Date.now();
  let phase = 'idle';
  const take = () => {
    const m = processMemory(pid);
    if (!m) return;
    samples.push({ phase, at: (Date.now() - started) / 1000, rssMb: m.rssMb, pssMb: m.pssMb });
    process.stderr.write(
      `[waiting] ${phase} +${samples.at(-1)!.at.toFixed(0)} s: worker RSS ${m.rssMb.toFixed(0)} MB, PSS ${m.pssMb.toFixed(0)} MB, load ${loadavg()[0]!.toFixed(1)}\n`,
    );
  };
  take();
  const timer = setInterval(take, SAMPLE_MS);
  return {
    samples,
    enter(next: string) {
      phase = next;
      take();
    },
    stop: () => clearInterval(timer),
    peak: (of: string) => {
      const in_ = samples.filter((s) => s.phase === of);
      return {
        rssMb: Math.max(...in_.map((s) => s.rssMb)),
        pssMb: Math.max(...in_.map((s) => s.pssMb)),
        count: in_.length,
      };
    },
  };
}

/** Deliveries whose first attempt failed and that wait for their next (pending, attempts >= 1), and all attempts made. */
async function deliveryCounts(stack: TestStack): Promise<{ waiting: number; attempts: number; rows: number }> {
  const row = await one<{ waiting: string; attempts: string; rows: string }>(
    stack.ds,
    `SELECT count(*) FILTER (WHERE status = 'pending' AND attempts >= 1) AS waiting,
            coalesce(sum(attempts), 0) AS attempts, count(*) AS rows
       FROM webhook_deliveries`,
  );
  return { waiting: Number(row!.waiting), attempts: Number(row!.attempts), rows: Number(row!.rows) };
}

async function stop(proc: BerthProcess): Promise<void> {
  proc.child.kill('SIGTERM');
  const killed = setTimeout(() => proc.child.kill('SIGKILL'), 15_000);
  await proc.exited;
  clearTimeout(killed);
}

const ms = (x: number) => `${x.toFixed(1)} ms`;
const loads = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');

async function run(stack: TestStack, keyring: string, receiverUrl: string): Promise<boolean> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'berth-bench-waiting-'));
  const apiPort = await freePort();
  const processes: BerthProcess[] = [];
  const background = backgroundCpu({ cpus: process.env.BENCH_BACKGROUND_CPUS });
  // Cores asked for and not given would make a 30-minute run measure something else.
  if (background.refused && process.env.BENCH_BACKGROUND_CPUS)
    throw new Error(`BENCH_BACKGROUND_CPUS: ${background.refused}`);
  if (background.refused) process.stderr.write(`[waiting] ${background.describe()}\n`);
  try {
    background.place('temporal', devServerProcess(stack.config.temporalAddress!.split(':').at(-1)!).pid);
    // The worker as production runs it: the compiled build (the local data-plane driver, its
    // ingress on a free port).
    const worker = spawnBerth(
      'worker',
      stack,
      keyring,
      {
        BERTH_DATA_DIR: dataDir,
        BERTH_INGRESS_PORT: String(await freePort()),
        BERTH_INGRESS_TLS_PORT: String(await freePort()),
        // V8 flags for the worker alone, as a deployment would set them (e.g. --max-semi-space-size=2).
        ...(process.env.BENCH_WORKER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_WORKER_NODE_OPTIONS } : {}),
      },
      'compiled',
    );
    processes.push(worker);
    const api = spawnBerth(
      'api',
      stack,
      keyring,
      { PORT: String(apiPort), BERTH_HOST: '127.0.0.1', BERTH_DATA_DIR: dataDir, BERTH_RATE_LIMIT: '1000000/60s' },
      'compiled',
    );
    processes.push(api);
    await Promise.all([worker.ready, api.ready]);
    background.place('worker', worker.child.pid!);
    const memory = memorySampler(worker.child.pid!);

    const ws = await seedWorkspace(stack.ds);
    const auth = { authorization: `Bearer ${ws.ownerToken}` };
    for (let i = 0; i < WEBHOOKS; i++) {
      const res = await stack.http
        .post('/api/v1/webhooks')
        .set(auth)
        .send({ url: receiverUrl, events: ['quota_alert'], description: `bench ${i}` });
      if (res.status !== 201) throw new Error(`webhook create: ${res.status} ${res.text}`);
    }
    const url = `http://127.0.0.1:${apiPort}/api/v1/webhooks`;
    const timed = (seconds: number): Promise<PacedLoadResult> => pacedLoadFromProcess(url, auth, RATE, seconds);

    await timed(5); // warm-up: JIT, pools, the token cache
    memory.enter('baseline');
    const baselineLoad = loads();
    const baseline = await timed(BASELINE_S);

    memory.enter('creating');
    const events = Math.ceil(N / WEBHOOKS);
    const started = Date.now();
    await emitEvents(stack, ws.uuid, events, 20);
    const emittedMs = Date.now() - started;
    let counts = await deliveryCounts(stack);
    let reported = Date.now();
    while (counts.waiting < N && Date.now() - started < CREATE_LIMIT_MS) {
      await new Promise((r) => setTimeout(r, 1000));
      counts = await deliveryCounts(stack);
      if (Date.now() - reported > 30_000) {
        reported = Date.now();
        process.stderr.write(`[waiting] ${counts.waiting}/${N} deliveries failed once and wait\n`);
      }
    }
    const createdMs = Date.now() - started;
    if (counts.waiting < N) {
      process.stdout.write(
        `waiting bench FAILED: ${counts.waiting}/${N} deliveries waiting after ${(createdMs / 1000).toFixed(0)} s\n`,
      );
      return false;
    }
    const open = await stack.temporal.workflow.count(
      `TaskQueue = '${stack.taskQueue}' AND WorkflowType = '${WEBHOOK_DELIVERY_WORKFLOW}' AND ExecutionStatus = 'Running'`,
    );

    memory.enter('waiting');
    const waitingLoad = loads();
    const waiting = await timed(WAITING_S);
    const after = await deliveryCounts(stack);
    memory.stop();

    const peak = memory.peak('waiting');
    const idle = memory.peak('baseline');
    const creating = memory.peak('creating');
    const lines = [
      `webhooks waiting bench (N=${N}: ${WEBHOOKS} webhooks x ${events} events, receiver always 500, Temporal dev server in real time, berth worker and berth api processes)`,
      `  created ${N} deliveries waiting in retry timers in ${(createdMs / 1000).toFixed(1)} s (emitted in ${(emittedMs / 1000).toFixed(1)} s; ${(N / (createdMs / 1000)).toFixed(1)} first attempts/s; ${open.count} delivery workflows open)`,
      `  worker RSS waiting peak ${peak.rssMb.toFixed(0)} MB (goal <= ${RSS_GOAL_MB} MB; PSS ${peak.pssMb.toFixed(0)} MB; ${peak.count} samples over ${WAITING_S} s, ${after.attempts - counts.attempts} retries fired meanwhile; idle ${idle.rssMb.toFixed(0)} MB, creating peak ${creating.rssMb.toFixed(0)} MB)`,
      `  API p99 waiting/baseline ${(waiting.p99 / baseline.p99).toFixed(2)} (GET /api/v1/webhooks at ${RATE}/s: p99 ${ms(waiting.p99)} vs ${ms(baseline.p99)}, p50 ${ms(waiting.p50)} vs ${ms(baseline.p50)}, ${waiting.bad + baseline.bad} failed)`,
      `  ${background.describe()}`,
      `  load average (1, 5, 15 min) at baseline ${baselineLoad}, waiting ${waitingLoad}, end ${loads()}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    return waiting.bad + baseline.bad === 0;
  } finally {
    await Promise.all(processes.map(stop));
    background.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  buildBerth();
  await globalSetup();
  const receiver = await startReceiver(() => ({ status: 500, body: 'bench: always 500' }));
  const forget = setInterval(() => (receiver.hits.length = 0), 1000); // only the answers matter
  const keyring = `k1:${SecretBox.generateKey()}`;
  // The suite's Temporal dev server (in memory, real time: nothing skipped); no in-process worker.
  const stack = await startStack({
    env: { BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW, LOG_LEVEL: 'warn' },
    secretKeyring: keyring,
  });
  try {
    if (!(await run(stack, keyring, receiver.url))) process.exitCode = 1;
  } finally {
    clearInterval(forget);
    await stack.close();
    await receiver.close();
    await globalTeardown();
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
