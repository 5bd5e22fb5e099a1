/**
 * Run as a child process (tsx): applies the worker heap limits given as JSON in argv[2]
 * (or none), then reports as JSON the heap limit of a worker thread started afterwards and
 * the largest heap this process reached while 64 MB of live data stood beside a stream of
 * short-lived objects that survive long enough to reach the old generation.
 */
import { getHeapStatistics } from 'node:v8';
import { Worker } from 'node:worker_threads';
import { limitWorkerHeap } from '../../worker/heap';

async function main(): Promise<void> {
  if (process.argv[2]) limitWorkerHeap(JSON.parse(process.argv[2]));
  const threadHeapLimit = await new Promise<number>((resolve, reject) => {
    const worker = new Worker(
      "require('node:worker_threads').parentPort.postMessage(require('node:v8').getHeapStatistics().heap_size_limit)",
      { eval: true },
    );
    worker.once('message', (limit: number) => void worker.terminate().then(() => resolve(limit)));
    worker.once('error', reject);
  });
  const live = Array.from({ length: 64 }, () => new Array(131072).fill(1.5)); // 64 MB of doubles
  const ring: unknown[] = new Array(200_000);
  let peak = 0;
  for (let i = 0; i < 4_000_000; i++) {
    ring[i % ring.length] = { i, text: `object ${i}`, list: [i, i + 1, i + 2] };
    if (i % 5000 === 0) {
      peak = Math.max(peak, getHeapStatistics().total_heap_size);
      await new Promise((r) => setTimeout(r, 1));
    }
  }
  // The live data is read at the end, so it stays live throughout.
  process.stdout.write(JSON.stringify({ threadHeapLimit, peakHeap: peak, liveArrays: live.length }));
}

void main();
