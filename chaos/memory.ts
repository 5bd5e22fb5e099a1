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
    const memory = processMemory(pid);
    if (memory) {
      const key = pid === root ? 'berth (api+worker)' : memory.name;
      totals[key] = (totals[key] ?? 0) + memory.pssMb;
    }
  }
  return totals;
}

/**
 * One process's memory in MB from /proc: its resident set (VmRSS) and its proportional
 * share (Pss from smaps_rollup; the RSS where the kernel gives none). Undefined once gone.
 */
export function processMemory(pid: number): { name: string; rssMb: number; pssMb: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const name = /^Name:\s+(\S+)/m.exec(status)?.[1] ?? '?';
    const rssKb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    let pssKb = rssKb;
    try {
      pssKb = Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? rssKb);
    } catch {
      /* no smaps_rollup: RSS */
    }
    return { name, rssMb: rssKb / 1024, pssMb: pssKb / 1024 };
  } catch {
    return undefined; // gone meanwhile
  }
}
