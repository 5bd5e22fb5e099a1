/**
 * `npm run bench:webhooks`: webhook events delivered per second end to end (a workflow
 * emits through emitEvent, the fan-out starts a delivery workflow, its activity signs and
 * POSTs to a local receiver), as a ratio to the same Temporal server's throughput for a
 * workflow that runs one no-op activity, measured in the same run on the same worker.
 * Both closed loop (the ceiling). Then an open loop at half the ceiling's rate, from which
 * p50/p99 from emit (the event's timestamp) to its first attempt reaching the receiver.
 * Also: CPU per event of this process (worker and client), PostgreSQL and Temporal's dev
 * server, and the Temporal tasks one event costs.
 *
 * BENCH_N (default 300) workflows per phase, BENCH_CONCURRENCY (default 50) in flight;
 * BENCH_OPEN_RATE (events per second) overrides the open loop's rate.
 */
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import globalSetup from '../../test/support/global-setup';
import globalTeardown from '../../test/support/global-teardown';
import { seedWorkspace } from '../../test/support/fixtures';
import { startStack } from '../../test/support/stack';
import { RECEIVER_ALLOW, startReceiver } from '../../test/support/webhooks';
import { startWorker } from '../../worker/main';
import { closedLoop, cpuPerItem, emitToArrival, firstArrivals, openLoop, percentile, taskCounts } from './measure';

const N = Number(process.env.BENCH_N ?? 300);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);

async function main(): Promise<void> {
  await globalSetup();
  const receiver = await startReceiver();
  const stack = await startStack({ env: { BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW, LOG_LEVEL: 'warn' } });
  const connection = await NativeConnection.connect({ address: stack.config.temporalAddress! });
  const taskQueue = `bench-${Date.now()}`;
  // Berth's worker (its activities, the outbox reconciler) with the bench's workflows beside Berth's own.
  const worker = await startWorker({
    connection,
    namespace: stack.config.temporalNamespace,
    taskQueue,
    deps: stack.activityDeps,
    outbox: stack.outbox,
    logger: stack.logger,
    reconcileIntervalMs: stack.config.reconcileIntervalMs,
    workerOptions: { workflowsPath: path.join(__dirname, 'workflows.ts') },
    activities: { benchNoop: async () => {} },
  });
  try {
    const ws = await seedWorkspace(stack.ds);
    const res = await stack.http
      .post('/api/v1/webhooks')
      .set('Authorization', `Bearer ${ws.ownerToken}`)
      .send({ url: receiver.url, events: ['quota_alert'] });
    if (res.status !== 201) throw new Error(`webhook create: ${res.status} ${res.text}`);
    const webhookUuid = res.body.uuid as string;
    const client = stack.temporal;
    const start = (type: string, args: unknown[], id: string) =>
      client.workflow.start(type, { taskQueue, workflowId: id, args });
    const run = async (type: string, args: unknown[], id: string) => (await start(type, args, id)).result();

    // Warm up both paths (bundle load, connections, caches).
    await closedLoop(20, CONCURRENCY, (i) => run('benchOneNoopActivity', [], `warm-noop-${i}-${taskQueue}`));
    await closedLoop(20, CONCURRENCY, (i) => run('benchEmitEvent', [ws.uuid], `warm-emit-${i}-${taskQueue}`));
    await new Promise((r) => setTimeout(r, 1000));

    const baseline = await cpuPerItem(N, () =>
      closedLoop(N, CONCURRENCY, (i) => run('benchOneNoopActivity', [], `noop-${i}-${taskQueue}`)),
    );

    // The ceiling: emitting workflows closed loop, until every event's first attempt has arrived.
    receiver.hits.length = 0;
    const wallStart = Date.now();
    const ceiling = await cpuPerItem(N, async () => {
      await closedLoop(N, CONCURRENCY, (i) => run('benchEmitEvent', [ws.uuid], `emit-${i}-${taskQueue}`));
      return firstArrivals(receiver, N);
    });
    const deliveredMs = Math.max(...ceiling.result.map((a) => a.at)) - wallStart;
    const closedLatencies = emitToArrival(ceiling.result);
    const baselineRate = N / (baseline.result / 1000);
    const deliveredRate = ceiling.result.length / (deliveredMs / 1000);

    // Latency at half the ceiling: emitting workflows started at a fixed rate whatever is in flight.
    await new Promise((r) => setTimeout(r, 1000));
    receiver.hits.length = 0;
    // BENCH_OPEN_RATE fixes the rate instead (to compare latencies of two versions at the same load).
    const halfRate = Number(process.env.BENCH_OPEN_RATE) || deliveredRate / 2;
    const half = await cpuPerItem(N, async () => {
      await openLoop(N, halfRate, (i) => run('benchEmitEvent', [ws.uuid], `half-${i}-${taskQueue}`));
      return firstArrivals(receiver, N);
    });
    const latencies = emitToArrival(half.result);

    const noopTasks = await taskCounts(client.workflow.getHandle(`noop-0-${taskQueue}`));
    const emitHandle = client.workflow.getHandle(`emit-0-${taskQueue}`);
    const eventId = (await emitHandle.result()) as string;
    const emitTasks = await taskCounts(emitHandle);
    const deliveryTasks = await taskCounts(client.workflow.getHandle(`webhook-delivery/${webhookUuid}/${eventId}`));
    const tasks = (c: typeof noopTasks) =>
      `${c.workflowTasks} workflow tasks, ${c.activityTasks} activity tasks, ${c.localActivities} local activities`;

    const lines = [
      `webhooks bench (N=${N}, concurrency ${CONCURRENCY}, one worker, Temporal dev server, local receiver)`,
      `  baseline: one-no-op-activity workflows      ${baselineRate.toFixed(1)} /s`,
      `  webhook events delivered end to end          ${deliveredRate.toFixed(1)} /s (${ceiling.result.length}/${N} arrived)`,
      `  ratio delivered/baseline                     ${(deliveredRate / baselineRate).toFixed(3)}`,
      `  emit -> first attempt at the ceiling p50/p99 ${percentile(closedLatencies, 50)} / ${percentile(closedLatencies, 99)} ms`,
      `  open loop (half the ceiling unless set)     ${halfRate.toFixed(1)} /s (${half.result.length}/${N} arrived)`,
      `  emit -> first attempt p50                    ${percentile(latencies, 50)} ms`,
      `  emit -> first attempt p99                    ${percentile(latencies, 99)} ms`,
      `  CPU per no-op workflow                       ${baseline.cpu}`,
      `  CPU per event at the ceiling                 ${ceiling.cpu}`,
      `  CPU per event at half the ceiling            ${half.cpu}`,
      `  per no-op workflow: 1 start, ${tasks(noopTasks)}`,
      `  per event: 2 starts (emitting workflow, delivery workflow)`,
      `    emitting workflow: ${tasks(emitTasks)}`,
      `    delivery workflow: ${tasks(deliveryTasks)}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    if (ceiling.result.length < N || half.result.length < N) process.exitCode = 1;
  } finally {
    await worker.shutdown().catch(() => {});
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
