import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_WORKER_HEAP, loadConfig } from '../../platform/config';
import { ROOT } from '../support/env';

interface Probe {
  threadHeapLimit: number;
  peakHeap: number;
}

/** test/support/heap-probe.ts in a process of its own: V8's flags are process-wide. */
async function probe(limits?: object): Promise<Probe> {
  const args = [
    '--import',
    'tsx',
    path.join(ROOT, 'test/support/heap-probe.ts'),
    ...(limits ? [JSON.stringify(limits)] : []),
  ];
  const { stdout } = await promisify(execFile)(process.execPath, args, { cwd: ROOT });
  return JSON.parse(stdout) as Probe;
}

const MB = 1024 * 1024;

describe('a worker process bounds its heaps (BERTH_WORKER_HEAP_GROWTH_PERCENT, BERTH_WORKFLOW_THREAD_SEMI_SPACE_MB)', () => {
  it('defaults to 20 % growth past the live data and a 4 MB young generation for the workflow thread; 0 leaves each to V8', () => {
    expect(loadConfig({}).workerHeap).toEqual(DEFAULT_WORKER_HEAP);
    expect(DEFAULT_WORKER_HEAP).toEqual({ growthPercent: 20, workflowThreadSemiSpaceMb: 4 });
    expect(
      loadConfig({ BERTH_WORKER_HEAP_GROWTH_PERCENT: '0', BERTH_WORKFLOW_THREAD_SEMI_SPACE_MB: '0' }).workerHeap,
    ).toEqual({ growthPercent: 0, workflowThreadSemiSpaceMb: 0 });
    for (const bad of ['-1', '2.5', 'lots']) {
      expect(() => loadConfig({ BERTH_WORKER_HEAP_GROWTH_PERCENT: bad })).toThrow(
        /BERTH_WORKER_HEAP_GROWTH_PERCENT must be a (whole )?number/,
      );
      expect(() => loadConfig({ BERTH_WORKFLOW_THREAD_SEMI_SPACE_MB: bad })).toThrow(
        /BERTH_WORKFLOW_THREAD_SEMI_SPACE_MB must be a (whole )?number/,
      );
    }
  });

  it('garbage that reaches the old generation is collected long before V8 would; a thread started afterwards has the small young generation', async () => {
    const [own, limited] = await Promise.all([probe(), probe(DEFAULT_WORKER_HEAP)]);
    // About 95 MB live: V8 alone let the heap reach 480-530 MB here, the limits 180-190 MB.
    expect(limited.peakHeap).toBeLessThan(own.peakHeap * 0.6);
    // A semi-space of 4 MB instead of 16: the young generation (three semi-spaces' worth) is 36 MB smaller.
    expect(own.threadHeapLimit - limited.threadHeapLimit).toBe(3 * (16 - 4) * MB);
  }, 60_000);
});
