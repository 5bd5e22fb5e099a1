import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { Logger } from 'pino';

/** Every stop step together stays under this, so the whole stack is down within 10 s of the signal. */
export const STOP_BUDGET_MS = 7_000;
const STEP_MS = 4_000;
const WATCH_MS = 500;
const GUARD_MS = 1_000;

/** Live descendants of `pid`, children before grandchildren (Linux: /proc/<pid>/task/<tid>/children). */
export function descendants(pid: number): number[] {
  const out: number[] = [];
  const visit = (parent: number) => {
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${parent}/task`);
    } catch {
      return;
    }
    for (const task of tasks) {
      let children = '';
      try {
        children = readFileSync(`/proc/${parent}/task/${task}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const child of children.split(' ').filter(Boolean).map(Number)) {
        out.push(child);
        visit(child);
      }
    }
  };
  visit(pid);
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function signal(pids: readonly number[], sig: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      /* gone already */
    }
  }
}

function parentOf(pid: number): number | undefined {
  try {
    // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/**
 * The watchdog: a shell that ignores signals and reads, one line at a time, the pids Berth's
 * children hold now. When Berth dies in any way (SIGKILL included) its stdin reaches EOF: it
 * sends SIGTERM to the last set, and SIGKILL 5 s later to whatever is left. An empty last
 * line (a clean stop) means nothing to do.
 */
const WATCHDOG = `trap '' INT TERM HUP
pids=
while IFS= read -r line; do pids=$line; done
[ -n "$pids" ] || exit 0
kill -TERM $pids 2>/dev/null
i=0
while [ $i -lt 50 ]; do
  left=
  for p in $pids; do kill -0 $p 2>/dev/null && left=1; done
  [ -n "$left" ] || exit 0
  sleep 0.1
  i=$((i + 1))
done
kill -KILL $pids 2>/dev/null
exit 0`;

function startWatchdog(logger: Logger): { guard(pids: readonly number[]): void; pid: number | undefined } {
  let child: ChildProcess;
  try {
    child = spawn('/bin/sh', ['-c', WATCHDOG], { stdio: ['pipe', 'ignore', 'ignore'] });
  } catch (err) {
    logger.warn({ err }, 'no watchdog: children may outlive a killed berth');
    return { guard: () => {}, pid: undefined };
  }
  child.on('error', (err) => logger.warn({ err }, 'watchdog failed'));
  child.stdin!.on('error', () => {});
  child.unref();
  (child.stdin as unknown as { unref?: () => void }).unref?.();
  let last = '';
  return {
    pid: child.pid,
    guard(pids) {
      const line = pids.join(' ');
      if (line === last || !child.stdin!.writable) return;
      last = line;
      child.stdin!.write(`${line}\n`);
    },
  };
}

let supervised = false;

/** Whether supervise handles this process's signals (other handlers must not exit it). */
export function ownsSignals(): boolean {
  return supervised;
}

/**
 * The stop of `berth dev`, and of `npm run chaos` (which starts the same kinds of servers).
 * SIGINT, SIGTERM or SIGHUP (to the process group, or to berth alone), or the end of the
 * process that started berth (`npm start` runs it under `sh -c`; npm ends on SIGTERM without
 * waiting for it), runs `stops` in reverse order, each step at most 4 s and all within
 * STOP_BUDGET_MS; then whatever still runs under berth (app processes, add-on servers, a
 * server that did not stop) gets SIGTERM and, a second later, SIGKILL; then berth exits
 * (with `signalExitCode`, 0 unless given). A second SIGINT or SIGTERM kills every descendant
 * at once. A watchdog process guards against berth itself being killed (see WATCHDOG).
 * `name` prefixes what it says ("berth").
 * Returns the stop, for a failed start or a dead worker.
 */
export function supervise(options: {
  stops: Array<() => Promise<void>>;
  say: (msg: string) => void;
  logger: Logger;
  name?: string;
  signalExitCode?: number;
}): (code: number) => Promise<void> {
  const { stops, say, logger, name = 'berth', signalExitCode = 0 } = options;
  supervised = true;
  process.stdout.on('error', () => {}); // the terminal or pipe may be gone before berth is
  const watchdog = startWatchdog(logger);
  const ours = (pid: number) => pid !== watchdog.pid;
  const guardTimer = setInterval(() => watchdog.guard(descendants(process.pid).filter(ours)), GUARD_MS);
  guardTimer.unref();

  let stopping = false;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    clearInterval(guardTimer);
    say(`\n${name}: stopping…`);
    const deadline = Date.now() + STOP_BUDGET_MS;
    for (const stop of [...stops].reverse()) {
      const left = Math.min(STEP_MS, deadline - Date.now());
      if (left <= 0) break;
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          stop(),
          new Promise<void>((resolve) => {
            timer = setTimeout(resolve, left);
          }),
        ]);
      } catch (err) {
        logger.error({ err }, 'error while stopping');
      } finally {
        clearTimeout(timer);
      }
    }
    const left = descendants(process.pid).filter(ours);
    if (left.length > 0) {
      signal(left, 'SIGTERM');
      for (let i = 0; i < 10 && left.some(alive); i++) await new Promise((r) => setTimeout(r, 100));
      signal(left.filter(alive), 'SIGKILL');
    }
    watchdog.guard([]);
    say(`${name}: stopped`);
    process.exit(code);
  };
  const killNow = () => {
    say(`\n${name}: killing everything now`);
    signal(descendants(process.pid), 'SIGKILL');
    process.exit(130);
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => (stopping && sig !== 'SIGHUP' ? killNow() : void stopAll(signalExitCode)));
  }

  // Under npm, berth's parent is the `sh -c` npm runs the script in: watch npm as well.
  const parent = process.ppid;
  const launcher = process.env.npm_lifecycle_event ? parentOf(parent) : undefined;
  const watch = setInterval(() => {
    if (process.ppid === parent && (launcher === undefined || launcher <= 1 || alive(launcher))) return;
    clearInterval(watch);
    say(`\n${name}: the process that started it is gone`);
    void stopAll(signalExitCode);
  }, WATCH_MS);
  watch.unref();
  return stopAll;
}
