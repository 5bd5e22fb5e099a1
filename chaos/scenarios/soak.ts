import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import type { TestStack } from '../../test/support/stack';
import type { Receiver } from '../../test/support/webhooks';
import { check, emitEvents, percentile, subscribe, type Outcome } from '../common';
import { memoryByCommand } from '../memory';

const CLIENTS = 16;
/** p99 on a shared 2-core machine jitters by a few ms; flat means within 10% or this much. */
const P99_SLACK_MS = 5;
/** A few-MB helper process (tsx's esbuild) moves by a MB or two; flat means within 10% or this much. */
const MEMORY_SLACK_MB = 5;

interface Sample {
  minute: number;
  rps: number;
  p99: number;
  rss: Record<string, number>;
}

/**
 * Measures the API's ceiling (closed loop, 16 clients, GET /webhooks), then holds half of
 * it open-loop with one webhook event a second: a warm-up (`warmUpMinutes`), then `minutes`
 * sampled, each process's memory (PSS, see memory.ts) and the API p99 once a minute. Passes
 * when the trend over all sampled minutes (a least-squares line) moves each figure by at most
 * 10% of its mean over the run (or 5 ms, 5 MB).
 */
export async function soak(stack: TestStack, receiver: Receiver, options: { minutes: number }): Promise<Outcome> {
  const { ws, auth } = await subscribe(stack, receiver);
  const url = `http://127.0.0.1:${(stack.server.address() as AddressInfo).port}/api/v1/webhooks`;
  const headers = { authorization: auth.Authorization };
  const dispatcher = new Agent({ connections: 64 });
  const get = async (): Promise<number> => {
    const t = performance.now();
    const res = await request(url, { headers, dispatcher });
    await res.body.dump();
    check(res.statusCode === 200, `GET /webhooks answered ${res.statusCode}`);
    return performance.now() - t;
  };
  // Logs, response bodies and hits are kept for other scenarios' scans; a soak must not keep them.
  const forget = () => {
    stack.logLines.length = 0;
    stack.responseBodies.length = 0;
    receiver.hits.length = 0;
  };

  let done = 0;
  const until = Date.now() + 5_000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (Date.now() < until) {
        await get();
        done++;
      }
    }),
  );
  const ceiling = done / 5;
  const rate = ceiling / 2;
  forget();

  const samples: Sample[] = [];
  let latencies: number[] = [];
  let errors = 0;
  let running = true;
  // Set while a sample is taken: the load stops and its schedule starts afresh afterwards.
  let paused: Promise<void> | null = null;
  const inFlight = new Set<Promise<void>>();
  const load = (async () => {
    let started = performance.now();
    for (let i = 0; running; i++) {
      if (paused) {
        await paused;
        started = performance.now();
        i = 0;
      }
      const due = started + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const p = get()
        .then(
          (ms) => {
            latencies.push(ms);
          },
          () => {
            errors++;
          },
        )
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
  })();
  const events = (async () => {
    while (running) {
      await emitEvents(stack, ws.uuid, 1).catch(() => {
        errors++;
      });
      await new Promise((r) => setTimeout(r, 1_000));
    }
  })();
  const forgetting = setInterval(forget, 1_000);
  try {
    await new Promise((r) => setTimeout(r, warmUpMinutes(options.minutes) * 60_000));
    for (let minute = 1; minute <= options.minutes; minute++) {
      latencies = [];
      await new Promise((r) => setTimeout(r, 60_000));
      // The collection below stops this process (the API's) for a few hundred ms on a heap this
      // size: were requests flowing, the ones it held, and the burst an open loop sends to catch
      // up after it, would count as the API's latency in the next minute. So the load pauses:
      // this minute's requests finish, then the collection and the memory sample, then it resumes.
      let resume!: () => void;
      paused = new Promise<void>((r) => (resume = r));
      try {
        await Promise.all(inFlight);
        const p99 = percentile(latencies, 99);
        const rps = latencies.length / 60;
        collectGarbage();
        samples.push({ minute, rps, p99, rss: memoryByCommand() });
      } finally {
        paused = null;
        resume();
      }
      const s = samples.at(-1)!;
      process.stderr.write(
        `[soak] minute ${minute}: ${s.rps.toFixed(0)} req/s, p99 ${s.p99.toFixed(1)} ms, memory ${Object.entries(s.rss)
          .map(([k, v]) => `${k} ${v.toFixed(0)} MB`)
          .join(', ')}\n`,
      );
    }
  } finally {
    running = false;
    clearInterval(forgetting);
    await load;
    await events;
    await Promise.all(inFlight);
    await dispatcher.close();
  }
  check(errors === 0, `${errors} requests or emits failed during the soak`);
  check(samples.length >= 2, `a soak needs at least 2 minutes`);
  const p99 = samples.map((x) => x.p99);
  const processes = Object.keys(samples[0]!.rss);
  const memory = (k: string) => samples.map((x) => x.rss[k] ?? 0);
  const range = (xs: number[]) => `${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}`;
  const p99Drift = drift(p99);
  const grew = processes.filter((k) => !flat(drift(memory(k)), MEMORY_SLACK_MB));
  const rssLine = processes
    .map((k) => `${k} ${range(memory(k))} MB (trend ${signed(drift(memory(k)).change)} MB)`)
    .join(', ');
  const figure =
    `${options.minutes} min at ${rate.toFixed(0)} req/s (half the ${ceiling.toFixed(0)} req/s ceiling) + 1 event/s: ` +
    `p99 ${range(p99)} ms per minute (trend ${signed(p99Drift.change)} ms over the run; ${p99.map((x) => x.toFixed(0)).join('/')}); ` +
    `memory (PSS) per minute: ${rssLine}`;
  check(flat(p99Drift, P99_SLACK_MS), `p99 grew: ${figure}`);
  check(grew.length === 0, `memory grew more than 10% (${grew.join(', ')}): ${figure}`);
  return { figure };
}

/**
 * Minutes before the first sample: one (JIT, pools), and for runs of 30 minutes or more ten,
 * the time the bounded caches take to fill at this load. In the 60-minute run of 2026-11-24
 * (docs/reliability.md) PostgreSQL's PSS rose 54 -> 86 MB over the first 9 minutes as its
 * backends touched more shared buffers, then held; the dev server's mutable-state cache
 * (1,000 entries, about 2.4 per workflow) fills in about 7 minutes at one workflow a second.
 * A trend over those minutes measures the filling, not a leak.
 */
export function warmUpMinutes(minutes: number): number {
  return minutes >= 30 ? 10 : 1;
}

/**
 * A full collection in Berth's process (the API and worker run in this one) before each
 * sample, when node runs with --expose-gc (`npm run chaos` and `npm run soak` do): a leak
 * is memory that survives a collection, while garbage not yet collected only says when V8
 * last chose to collect, which moved the 60-minute run's figure in 40-50 MB steps.
 */
function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
}

/**
 * The change a least-squares line through the per-minute samples makes over the run, and
 * the samples' mean: one noisy minute (a neighbour's load) moves it little, a leak moves it
 * steadily.
 */
export function drift(values: number[]): { change: number; mean: number } {
  const n = values.length;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const mid = (n - 1) / 2;
  let num = 0;
  let den = 0;
  values.forEach((v, i) => {
    num += (i - mid) * (v - mean);
    den += (i - mid) ** 2;
  });
  return { change: den === 0 ? 0 : (num / den) * (n - 1), mean };
}

/** Flat: the trend over the run within 10% of the mean, or within `slack`. */
function flat(d: { change: number; mean: number }, slack: number): boolean {
  return d.change <= Math.max(d.mean * 0.1, slack);
}

const signed = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(1)}`;
