import { readdirSync, readFileSync } from 'node:fs';

/**
 * Memory in MB of this process and every descendant, summed per command name (node,
 * postgres, temporal): PSS (each shared page counted once across the processes sharing it,
 * so PostgreSQL's backends do not count its shared buffers many times), RSS where the
 * kernel gives no PSS.
 */
export function memoryByCommand(root = process.pid): Record<string, number> {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      /* gone meanwhile */
    }
  }
  const totals: Record<string, number> = {};
  const visit = (pid: number) => {
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
    for (const child of parents.get(pid) ?? []) visit(child);
  };
  visit(root);
  return totals;
}
