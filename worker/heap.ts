import { setFlagsFromString } from 'node:v8';
import type { WorkerHeapLimits } from '../platform/config';

/**
 * Bounds the garbage a worker process's V8 heaps may hold. V8 lets a heap grow to three or
 * four times its live data before a full collection when it is busy; a worker retrying
 * thousands of deliveries keeps both its heaps (activities on the main thread, workflows on
 * their thread) there. `--heap-growing-percent` is read at each collection, so it takes
 * effect in the running process, for every heap; the semi-space size applies to isolates
 * created afterwards, which is why this runs before the worker starts its workflow thread.
 * Neither is a hard limit: a heap whose live data grows still grows with it.
 */
export function limitWorkerHeap(limits: WorkerHeapLimits): void {
  if (limits.growthPercent > 0) setFlagsFromString(`--heap-growing-percent=${limits.growthPercent}`);
  if (limits.workflowThreadSemiSpaceMb > 0)
    setFlagsFromString(`--max-semi-space-size=${limits.workflowThreadSemiSpaceMb}`);
}
