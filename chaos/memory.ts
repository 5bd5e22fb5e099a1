import { readFileSync } from 'node:fs';
import { processTree } from './processes';

/**
 * Memory in MB of this process and every descendant, summed per command name (node,
 * postgres, temporal): PSS (each shared page counted once across the processes sharing it,
 * so PostgreSQL's backends do not count its shared buffers many times), RSS where the
 * kernel gives no PSS.
 */
export function memoryByCommand(root = process.pid): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const pid of processTree(root)) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const name = /^Name:\s+(\S+)/m.exec(status)?.[1] ?? '?';
      let kb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      try {
        kb = Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? kb);
      } catch {
        /* no smaps_rollup: RSS */
      }
      const key = pid === root ? 'berth (api+worker)' : name;
      totals[key] = (totals[key] ?? 0) + kb / 1024;
    } catch {
      /* gone meanwhile */
    }
  }
  return totals;
}
