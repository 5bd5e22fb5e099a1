import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat's CPU times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** `root` and every process descending from it, read from /proc. */
export function processTree(root = process.pid): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      /* gone meanwhile */
    }
  }
  const tree: number[] = [];
  const visit = (pid: number) => {
    tree.push(pid);
    for (const child of children.get(pid) ?? []) visit(child);
  };
  visit(root);
  return tree;
}

/**
 * CPU seconds (user + system) used so far by this process and every live descendant,
 * summed per command name (node, postgres, temporal); this process is `own`.
 */
export function cpuByCommand(root = process.pid): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const pid of processTree(root)) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const key = pid === root ? 'own' : name;
      totals[key] = (totals[key] ?? 0) + (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
    } catch {
      /* gone meanwhile */
    }
  }
  return totals;
}

/**
 * The Temporal dev server (`temporal server start-dev`) listening at `port`: its pid and command
 * line, looked for among `pids` (every process on the machine by default).
 */
export function devServerProcess(port: number | string, pids?: number[]): { pid: number; args: string[] } {
  const candidates =
    pids ??
    readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .map(Number);
  for (const pid of candidates) {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (args.includes('start-dev') && args[args.indexOf('--port') + 1] === String(port)) return { pid, args };
    } catch {
      /* gone meanwhile */
    }
  }
  throw new Error(`no dev server process on port ${port}`);
}
