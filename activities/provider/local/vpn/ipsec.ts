import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { Logger } from 'pino';
import { DEFAULT_SEARCH_PATH, OWN_TOOL, findBinary, run } from '../data/commands';
import { pidOf, processAlive } from '../data/engine';
import { killProcessGroup, launch } from '../sandbox/launcher';
import {
  SWANCTL_CONF,
  charonConf,
  checkTunnelRef,
  checkTunnelSpec,
  tunnelConf,
  type SiteTunnelRef,
  type SiteTunnelSpec,
} from './ipsec-conf';

/**
 * Site-to-site IPsec tunnels on this machine: Debian's strongSwan, one charon per network
 * namespace, with userspace ESP (kernel-libipsec: a TUN device, as wireguard-go is for
 * WireGuard), so no kernel IPsec is needed. Each namespace has a folder of its own (0700):
 * charon's configuration, its control socket and pid file (its /run, bind-mounted in its own
 * mount view, since charon's pid file path is fixed), its log, and one 0600 file per tunnel
 * holding that tunnel's pre-shared key. Every operation reads what exists and makes it
 * match, so a restarted worker adopts the charon that runs.
 */

export interface IpsecOptions {
  /** The namespaces' folders (default /run/berth/ipsec: a tmpfs, gone with the machine like the tunnels). */
  root?: string;
  searchPath?: string;
  logger?: Pick<Logger, 'info'>;
  /** Tests: sees the argv of every command run (a key is never in one). */
  trace?: (argv: string[]) => void;
}

export interface SiteTunnelState extends SiteTunnelRef {
  charonPid: number;
  /** Both ends agreed (IKE SA established) and the ranges are carried (child SA installed). */
  established: boolean;
}

export function ipsecUnavailable(reason: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(reason, 'IpsecUnavailable');
}

const CHARON_DIRS = '/usr/lib/ipsec:/usr/libexec/ipsec:/usr/lib/strongswan:/usr/libexec/strongswan';
const LIBIPSEC_PLUGIN = 'plugins/libstrongswan-kernel-libipsec.so';

export function createIpsec(options: IpsecOptions = {}) {
  const root = options.root ?? '/run/berth/ipsec';
  const searchPath = options.searchPath ?? DEFAULT_SEARCH_PATH;
  const dirOf = (namespace: string) => path.join(root, namespace);
  const vici = (namespace: string) => `unix://${dirOf(namespace)}/run/charon.vici`;

  function bin() {
    const ip = findBinary(['ip'], undefined, searchPath);
    const swanctl = findBinary(['swanctl'], undefined, searchPath);
    const charon = findBinary(['charon'], undefined, CHARON_DIRS);
    const missing = [
      !ip && 'ip (Debian package iproute2)',
      !swanctl && 'swanctl (Debian package strongswan-swanctl)',
      !charon && 'charon (Debian package strongswan-charon)',
      charon &&
        !existsSync(path.join(path.dirname(charon), LIBIPSEC_PLUGIN)) &&
        'the kernel-libipsec plugin (Debian package libcharon-extra-plugins)',
    ].filter(Boolean);
    if (missing.length > 0) throw ipsecUnavailable(`site-to-site tunnels need ${missing.join(', ')}`);
    return { ip: ip!, swanctl: swanctl!, charon: charon! };
  }

  const env = (namespace: string) => ({
    PATH: searchPath,
    LANG: 'C',
    STRONGSWAN_CONF: path.join(dirOf(namespace), 'strongswan.conf'),
  });

  async function swanctl(namespace: string, args: string[]): Promise<string> {
    const argv = [bin().swanctl, ...args, '--uri', vici(namespace)];
    options.trace?.(argv);
    return run(argv, { env: env(namespace) });
  }

  /** The live charon of the namespace (its pid file names a live charon), or null. */
  function charonPid(namespace: string): number | null {
    const pid = pidOf(path.join(dirOf(namespace), 'run', 'charon.pid'));
    if (pid === null || !processAlive(pid)) return null;
    try {
      const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]!;
      return path.basename(argv0) === 'charon' ? pid : null;
    } catch {
      return null;
    }
  }

  async function answers(namespace: string): Promise<boolean> {
    try {
      await swanctl(namespace, ['--stats']);
      return true;
    } catch {
      return false;
    }
  }

  /** The namespace's charon, adopted when it answers, else started (its folder written first). */
  async function ensureCharon(namespace: string): Promise<number> {
    const running = charonPid(namespace);
    if (running !== null && (await answers(namespace))) return running;
    if (running !== null) await stopPid(running);
    const { ip, charon } = bin();
    const dir = dirOf(namespace);
    mkdirSync(path.join(dir, 'run'), { recursive: true, mode: 0o700 });
    mkdirSync(path.join(dir, 'tunnels'), { recursive: true, mode: 0o700 });
    writeFileSync(path.join(dir, 'strongswan.conf'), charonConf(dir), { mode: 0o600 });
    writeFileSync(path.join(dir, 'swanctl.conf'), SWANCTL_CONF, { mode: 0o600 });
    rmSync(path.join(dir, 'run', 'charon.pid'), { force: true }); // a dead charon's
    // charon's pid file is /run/charon.pid, whatever its configuration: its own /run, in the mount view `ip netns exec` gives it
    const command = [ip, 'netns', 'exec', namespace, '/bin/sh', '-c', 'mount --bind "$0" /run && exec "$1"'];
    command.push(path.join(dir, 'run'), charon);
    options.trace?.(command);
    const { child } = await launch(OWN_TOOL, { sandbox: null, command, env: env(namespace), output: 'ignore' });
    let exited: string | null = null;
    child.on('exit', (code, signal) => (exited = `exited with ${code ?? signal}`));
    child.unref();
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      if (exited !== null) throw new Error(`charon in ${namespace} ${exited} (see ${dir}/charon.log)`);
      if (await answers(namespace)) return child.pid!;
      await new Promise((r) => setTimeout(r, 100));
    }
    killProcessGroup(child.pid, 'SIGKILL');
    throw new Error(`charon in ${namespace} did not answer within 15 s (see ${dir}/charon.log)`);
  }

  async function stopPid(pid: number): Promise<void> {
    for (const [signal, ms] of [
      ['SIGTERM', 5000],
      ['SIGKILL', 3000],
    ] as const) {
      killProcessGroup(pid, signal);
      const deadline = Date.now() + ms;
      while (processAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      if (!processAlive(pid)) return;
    }
    throw new Error(`charon (pid ${pid}) does not exit`);
  }

  const tunnelFile = (ref: SiteTunnelRef) => path.join(dirOf(ref.namespace), 'tunnels', `${ref.name}.conf`);

  /** Loads every tunnel file of the namespace: new ones are added, changed ones replaced, removed ones unloaded. */
  const loadAll = (namespace: string) =>
    swanctl(namespace, ['--load-all', '--noprompt', '--file', path.join(dirOf(namespace), 'swanctl.conf')]);

  async function status(ref: SiteTunnelRef): Promise<SiteTunnelState | null> {
    checkTunnelRef(ref);
    const pid = charonPid(ref.namespace);
    if (pid === null || !existsSync(tunnelFile(ref))) return null;
    const sas = await swanctl(ref.namespace, ['--list-sas', '--ike', ref.name]);
    return {
      namespace: ref.namespace,
      name: ref.name,
      charonPid: pid,
      established: /ESTABLISHED/.test(sas) && /INSTALLED/.test(sas),
    };
  }

  return {
    /**
     * Creates or adopts the namespace's charon and loads the tunnel as the spec says (a
     * changed spec replaces it); an initiating end brings it up and keeps it up.
     */
    async ensureTunnel(spec: SiteTunnelSpec): Promise<SiteTunnelState> {
      checkTunnelSpec(spec);
      bin();
      if (!existsSync(`/run/netns/${spec.namespace}`))
        throw new Error(`network namespace ${spec.namespace} does not exist (ip netns add ${spec.namespace})`);
      await ensureCharon(spec.namespace);
      const file = tunnelFile(spec);
      writeFileSync(`${file}.new`, tunnelConf(spec), { mode: 0o600 });
      renameSync(`${file}.new`, file);
      await loadAll(spec.namespace);
      if (spec.initiate && !(await status(spec))!.established)
        await swanctl(spec.namespace, ['--initiate', '--child', spec.name, '--timeout', '10']).catch(() => {
          // the remote end may not be there yet: start_action and dead peer detection keep trying
        });
      const state = (await status(spec))!;
      options.logger?.info(
        { namespace: spec.namespace, tunnel: spec.name, established: state.established },
        'ipsec tunnel loaded',
      );
      return state;
    },

    status,

    /**
     * Ends the tunnel and removes its file (its key); the namespace's charon stops and its
     * folder goes with the last tunnel. Nothing there is fine.
     */
    async teardown(ref: SiteTunnelRef): Promise<void> {
      checkTunnelRef(ref);
      const pid = charonPid(ref.namespace);
      rmSync(tunnelFile(ref), { force: true });
      const dir = dirOf(ref.namespace);
      const left = existsSync(path.join(dir, 'tunnels')) ? readdirSync(path.join(dir, 'tunnels')) : [];
      if (pid !== null && left.length > 0 && (await answers(ref.namespace))) {
        await loadAll(ref.namespace);
        await swanctl(ref.namespace, ['--terminate', '--ike', ref.name, '--timeout', '5']).catch(() => {
          // no such SA: nothing to end
        });
        return;
      }
      if (pid !== null) await stopPid(pid);
      rmSync(dir, { recursive: true, force: true });
      options.logger?.info({ namespace: ref.namespace, tunnel: ref.name }, 'ipsec tunnel removed');
    },
  };
}

export type Ipsec = ReturnType<typeof createIpsec>;
