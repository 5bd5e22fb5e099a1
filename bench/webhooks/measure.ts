import type { WorkflowHandle } from '@temporalio/client';
import { cpuByCommand } from '../../chaos/processes';
import type { Receiver } from '../../test/support/webhooks';

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Closed loop: runs `count` tasks with at most `concurrency` in flight; returns the elapsed milliseconds. */
export async function closedLoop(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<unknown>,
): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await task(next++);
    }),
  );
  return performance.now() - started;
}

/** Open loop: starts task i at i / ratePerSecond seconds whatever the earlier ones are doing; waits for all. */
export async function openLoop(count: number, ratePerSecond: number, task: (i: number) => Promise<unknown>) {
  const started = performance.now();
  const running: Promise<unknown>[] = [];
  for (let i = 0; i < count; i++) {
    const wait = started + (i * 1000) / ratePerSecond - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    running.push(task(i));
  }
  await Promise.all(running);
}

/** The first arrival of each event at the receiver (by webhook-id), once `count` have arrived or two minutes passed. */
export async function firstArrivals(receiver: Receiver, count: number): Promise<Array<{ at: number; body: string }>> {
  const deadline = Date.now() + 120_000;
  const first = new Map<string, { at: number; body: string }>();
  for (;;) {
    for (const h of receiver.hits) {
      const id = String(h.headers['webhook-id']);
      if (!first.has(id)) first.set(id, { at: h.at, body: h.body });
    }
    if (first.size >= count || Date.now() > deadline) return [...first.values()];
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Milliseconds from each event's emit (its envelope timestamp) to its first attempt reaching the receiver, sorted. */
export function emitToArrival(arrivals: Array<{ at: number; body: string }>): number[] {
  return arrivals.map((a) => a.at - Date.parse(JSON.parse(a.body).timestamp)).sort((a, b) => a - b);
}

/** CPU milliseconds per item that this process and its children (PostgreSQL, Temporal) spend while `fn` runs. */
export async function cpuPerItem<T>(items: number, fn: () => Promise<T>): Promise<{ result: T; cpu: string }> {
  const before = cpuByCommand();
  const result = await fn();
  const after = cpuByCommand();
  const parts = Object.keys(after)
    .map((name) => ({ name, ms: ((after[name]! - (before[name] ?? 0)) * 1000) / items }))
    .filter((p) => p.ms >= 0.05)
    .sort((a, b) => b.ms - a.ms);
  const total = parts.reduce((sum, p) => sum + p.ms, 0);
  const label = (name: string) => (name === 'own' ? 'worker+client' : name);
  return {
    result,
    cpu: `${total.toFixed(1)} ms (${parts.map((p) => `${label(p.name)} ${p.ms.toFixed(1)}`).join(', ')})`,
  };
}

/** Workflow tasks, activity tasks and local activities in one workflow's history. */
export async function taskCounts(handle: WorkflowHandle) {
  const { events } = await handle.fetchHistory();
  const counts = { workflowTasks: 0, activityTasks: 0, localActivities: 0 };
  for (const e of events ?? []) {
    if (e.workflowTaskStartedEventAttributes) counts.workflowTasks += 1;
    if (e.activityTaskScheduledEventAttributes) counts.activityTasks += 1;
    if (e.markerRecordedEventAttributes?.markerName === 'core_local_activity') counts.localActivities += 1;
  }
  return counts;
}
