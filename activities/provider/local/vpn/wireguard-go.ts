import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { OWN_TOOL } from '../data/commands';
import { processAlive } from '../data/engine';
import { killProcessGroup, launch } from '../sandbox/launcher';

/**
 * wireguard-go, the userspace WireGuard, as a process of its own per interface: launched in
 * the foreground inside the namespace (`ip netns exec <ns> wireguard-go -f <if>`; the
 * launcher detaches it, so it outlives a worker crash), found again by its exact command
 * line, and stopped by deleting its interface (it exits when its TUN device goes), with
 * signals only if it lingers. Its output is dropped: a pipe to a worker that died would end
 * it at its next error line.
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
  /** The namespace it runs in (its UDP socket is that namespace's); null: the machine's own. */
  namespace: string | null;
  interfaceName: string;
  env: NodeJS.ProcessEnv;
  trace?: (argv: string[]) => void;
  /** Resolves true once the interface answers `wg show`. */
  ready: () => Promise<boolean>;
  timeoutMs?: number;
}

/** Starts wireguard-go for the interface and waits until it answers; its pid. */
export async function startWireguardGo(s: WireguardGoStart): Promise<number> {
  if (!existsSync('/dev/net/tun')) throw new Error('wireguard-go needs /dev/net/tun, which this machine lacks');
  const command = [
    ...(s.namespace === null ? [] : [s.ip, 'netns', 'exec', s.namespace]),
    s.wireguardGo,
    '-f',
    s.interfaceName,
  ];
  s.trace?.(command);
  const { child } = await launch(OWN_TOOL, {
    sandbox: null,
    command,
    env: { ...s.env, LOG_LEVEL: 'error' },
    output: 'ignore',
  });
  let exited: string | null = null;
  child.on('error', (err) => (exited = err.message));
  child.on('exit', (code, signal) => (exited = `exited with ${code ?? signal}`));
  child.unref();
  const timeoutMs = s.timeoutMs ?? 10_000;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited !== null)
      throw new Error(`wireguard-go ${s.interfaceName} ${exited} before it answered (is the interface name taken?)`);
    if (await s.ready()) return child.pid!;
    await new Promise((r) => setTimeout(r, 50));
  }
  killProcessGroup(child.pid, 'SIGKILL');
  throw new Error(`wireguard-go ${s.interfaceName} did not answer within ${timeoutMs} ms`);
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
 * then SIGKILL. Its control socket goes with it.
 */
export async function stopWireguardGo(
  pid: number | null,
  interfaceName: string,
  { interfaceDeleted }: { interfaceDeleted: boolean },
): Promise<void> {
  if (pid !== null && !(await exitedWithin(pid, interfaceDeleted ? 3000 : 0))) {
    killProcessGroup(pid, 'SIGTERM');
    if (!(await exitedWithin(pid, 3000))) {
      killProcessGroup(pid, 'SIGKILL');
      if (!(await exitedWithin(pid, 3000))) throw new Error(`wireguard-go ${interfaceName} (pid ${pid}) does not exit`);
    }
  }
  rmSync(controlSocket(interfaceName), { force: true });
}
