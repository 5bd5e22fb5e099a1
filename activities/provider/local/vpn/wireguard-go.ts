import { spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { processAlive } from '../data/engine';

/**
 * wireguard-go, the userspace WireGuard, as a process of its own per interface: started in
 * the foreground inside the namespace (`ip netns exec <ns> wireguard-go -f <if>`), detached so
 * it outlives a worker crash, found again by its exact command line, and stopped by deleting
 * its interface (it exits when its TUN device goes), with signals only if it lingers.
 */

/** The pid of the live wireguard-go serving `interfaceName` (its argv ends in `-f <interfaceName>`), or null. */
export function wireguardGoPid(interfaceName: string): number | null {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      continue; // gone meanwhile
    }
    if (
      argv.length === 3 &&
      path.basename(argv[0]!) === 'wireguard-go' &&
      argv[1] === '-f' &&
      argv[2] === interfaceName &&
      processAlive(Number(entry))
    )
      return Number(entry);
  }
  return null;
}

/** wireguard-go's control socket: one directory for every namespace, hence machine-unique interface names. */
export const controlSocket = (interfaceName: string) => `/run/wireguard/${interfaceName}.sock`;

export interface WireguardGoStart {
  ip: string;
  wireguardGo: string;
  namespace: string;
  interfaceName: string;
  /** Its output (errors only: LOG_LEVEL=error); never holds a key. */
  logFile: string;
  env: NodeJS.ProcessEnv;
  trace?: (argv: string[]) => void;
  /** Resolves when the interface answers `wg show`. */
  ready: () => Promise<boolean>;
  timeoutMs?: number;
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-5).join(' | ');
  } catch {
    return '';
  }
}

/** Starts wireguard-go for the interface and waits until it answers; rejects with its last output lines. */
export async function startWireguardGo(s: WireguardGoStart): Promise<number> {
  const argv = [s.ip, 'netns', 'exec', s.namespace, s.wireguardGo, '-f', s.interfaceName];
  s.trace?.(argv);
  const log = openSync(s.logFile, 'a', 0o600);
  let exited: string | null = null;
  const child = spawn(argv[0]!, argv.slice(1), {
    detached: true,
    stdio: ['ignore', log, log],
    env: { ...s.env, LOG_LEVEL: 'error' },
  });
  closeSync(log);
  child.on('error', (err) => (exited = err.message));
  child.on('exit', (code, signal) => (exited = `exited with ${code ?? signal}`));
  child.unref();
  const deadline = Date.now() + (s.timeoutMs ?? 10_000);
  while (Date.now() < deadline) {
    if (exited !== null) throw new Error(`wireguard-go ${s.interfaceName} ${exited}: ${tail(s.logFile)}`);
    if (await s.ready()) return child.pid!;
    await new Promise((r) => setTimeout(r, 50));
  }
  if (child.pid) stopPid(child.pid, 'SIGKILL');
  throw new Error(
    `wireguard-go ${s.interfaceName} did not answer within ${s.timeoutMs ?? 10_000} ms: ${tail(s.logFile)}`,
  );
}

function stopPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

async function exitedWithin(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (processAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

/**
 * Waits for the process to end once its interface was deleted; a process that lingers, or
 * whose interface could not be deleted (its namespace was deleted under it), gets SIGTERM,
 * then SIGKILL. Its socket and log go with it.
 */
export async function stopWireguardGo(
  pid: number | null,
  interfaceName: string,
  logFile: string,
  { interfaceDeleted }: { interfaceDeleted: boolean },
): Promise<void> {
  if (pid !== null && !(await exitedWithin(pid, interfaceDeleted ? 3000 : 0))) {
    stopPid(pid, 'SIGTERM');
    if (!(await exitedWithin(pid, 3000))) {
      stopPid(pid, 'SIGKILL');
      if (!(await exitedWithin(pid, 3000))) throw new Error(`wireguard-go ${interfaceName} (pid ${pid}) does not exit`);
    }
  }
  rmSync(controlSocket(interfaceName), { force: true });
  rmSync(logFile, { force: true });
}
