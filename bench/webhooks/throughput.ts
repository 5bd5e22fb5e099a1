/**
 * `npm run bench:webhooks`: webhook events delivered per second end to end (a workflow
 * emits through emitEvent, the fan-out starts a delivery workflow, its activity signs and
 * POSTs to a local receiver), as a ratio to the same Temporal server's throughput for a
 * workflow that runs one no-op activity, measured in the same run on the same worker;
 * plus p50/p99 from emit (the event's timestamp) to its first attempt reaching the receiver.
 *
 * BENCH_N (default 300) workflows per phase, BENCH_CONCURRENCY (default 50) in flight.
 */
import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import globalSetup from '../../test/support/global-setup';
import globalTeardown from '../../test/support/global-teardown';
import { seedWorkspace } from '../../test/support/fixtures';
import { startStack } from '../../test/support/stack';
import { RECEIVER_ALLOW, startReceiver } from '../../test/support/webhooks';

const N = Number(process.env.BENCH_N ?? 300);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Runs `count` tasks with at most CONCURRENCY in flight; returns the elapsed milliseconds. */
async function timed(count: number, task: (i: number) => Promise<unknown>): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, count) }, async () => {
      while (next < count) await task(next++);
    }),
  );
  return performance.now() - started;
}

async function main(): Promise<void> {
  await globalSetup();
  const receiver = await startReceiver();
  const stack = await startStack({ env: { BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW, LOG_LEVEL: 'warn' } });
  const connection = await NativeConnection.connect({ address: stack.config.temporalAddress! });
  const taskQueue = `bench-${Date.now()}`;
  const worker = await Worker.create({
    connection,
    taskQueue,
    workflowsPath: path.join(__dirname, 'workflows.ts'),
    activities: { ...createActivities(stack.activityDeps), benchNoop: async () => {} },
  });
  const running = worker.run();
  try {
    const ws = await seedWorkspace(stack.ds);
    const res = await stack.http
      .post('/api/v1/webhooks')
      .set('Authorization', `Bearer ${ws.ownerToken}`)
      .send({ url: receiver.url, events: ['quota_alert'] });
    if (res.status !== 201) throw new Error(`webhook create: ${res.status} ${res.text}`);
    const client = stack.temporal;
    const run = (type: string, args: unknown[], id: string) =>
      client.workflow.execute(type, { taskQueue, workflowId: id, args });

    // Warm up both paths (bundle load, connections, caches).
    await timed(20, (i) => run('benchOneNoopActivity', [], `warm-noop-${i}-${taskQueue}`));
    await timed(20, (i) => run('benchEmitEvent', [ws.uuid], `warm-emit-${i}-${taskQueue}`));
    await new Promise((r) => setTimeout(r, 1000));

    const baselineMs = await timed(N, (i) => run('benchOneNoopActivity', [], `noop-${i}-${taskQueue}`));

    receiver.hits.length = 0;
    const deliveredStart = performance.now();
    const wallStart = Date.now();
    await timed(N, (i) => run('benchEmitEvent', [ws.uuid], `emit-${i}-${taskQueue}`));
    const deadline = Date.now() + 120_000;
    const firstArrival = new Map<string, { at: number; body: string }>();
    for (;;) {
      for (const h of receiver.hits) {
        const id = String(h.headers['webhook-id']);
        if (!firstArrival.has(id)) firstArrival.set(id, { at: h.at, body: h.body });
      }
      if (firstArrival.size >= N || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const lastArrival = Math.max(...[...firstArrival.values()].map((a) => a.at));
    const deliveredMs = lastArrival - wallStart || performance.now() - deliveredStart;
    const latencies = [...firstArrival.values()]
      .map((a) => a.at - Date.parse(JSON.parse(a.body).timestamp))
      .sort((a, b) => a - b);

    const baselineRate = N / (baselineMs / 1000);
    const deliveredRate = firstArrival.size / (deliveredMs / 1000);
    const lines = [
      `webhooks bench (N=${N}, concurrency ${CONCURRENCY}, one worker, Temporal dev server, local receiver)`,
      `  baseline: one-no-op-activity workflows      ${baselineRate.toFixed(1)} /s`,
      `  webhook events delivered end to end          ${deliveredRate.toFixed(1)} /s (${firstArrival.size}/${N} arrived)`,
      `  ratio delivered/baseline                     ${(deliveredRate / baselineRate).toFixed(3)}`,
      `  emit -> first attempt p50                    ${percentile(latencies, 50)} ms`,
      `  emit -> first attempt p99                    ${percentile(latencies, 99)} ms`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    if (firstArrival.size < N) process.exitCode = 1;
  } finally {
    worker.shutdown();
    await running.catch(() => {});
    await connection.close();
    await stack.close();
    await receiver.close();
    await globalTeardown();
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
