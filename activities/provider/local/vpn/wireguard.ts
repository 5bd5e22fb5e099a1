import { existsSync } from 'node:fs';
import { ApplicationFailure } from '@temporalio/common';
import type { Logger } from 'pino';
import { DEFAULT_SEARCH_PATH, findBinary, run } from '../data/commands';
import {
  checkPeer,
  checkRef,
  checkSpec,
  gatewayConf,
  parseAllowedIps,
  peerAllowedIps,
  type WireguardGatewaySpec,
  type WireguardPeer,
  type WireguardRef,
} from './wireguard-conf';
import { startWireguardGo, stopWireguardGo, wireguardGoPid } from './wireguard-go';

/**
 * WireGuard gateways on this machine, each an interface inside a network namespace: the
 * kernel's WireGuard where the kernel has it, else Debian's wireguard-go (userspace). Every
 * operation reads what exists and makes it match, so calling it again, or after a crash of
 * the worker (the interface and its wireguard-go outlive it), adopts what is there: the
 * module keeps no state in memory. The private key reaches `wg` only on its standard input.
 */

export interface WireguardOptions {
  /** Where `ip`, `wg` and `wireguard-go` are looked up (default: the standard folders). */
  searchPath?: string;
  /** `userspace`: wireguard-go even where the kernel has WireGuard. */
  implementation?: 'auto' | 'userspace';
  logger?: Pick<Logger, 'info'>;
  /** Tests: sees the argv of every command run (a key is never in one). */
  trace?: (argv: string[]) => void;
}

export interface WireguardGatewayState extends WireguardRef {
  kind: 'kernel' | 'userspace';
  /** wireguard-go's pid (userspace), null for the kernel's. */
  pid: number | null;
  up: boolean;
  listenPort: number;
  publicKey: string;
  addresses: string[];
  routes: string[];
  peers: WireguardPeer[];
}

/** The error when WireGuard cannot run here: the activity fails for good with this reason. */
export function wireguardUnavailable(reason: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(reason, 'WireguardUnavailable');
}

interface LinkInfo {
  ifname: string;
  operstate: string;
  flags: string[];
  linkinfo?: { info_kind?: string };
}

interface AddrInfo {
  addr_info: Array<{ family: string; local: string; prefixlen: number; scope: string }>;
}

interface RouteInfo {
  dst: string;
  protocol?: string;
}

/**
 * argv that hands its standard input to `argv` through a real pipe: Node gives a child a
 * socket as its stdin, which `/dev/stdin` cannot open (ENXIO), and the key stays off the disk.
 */
export function readingPipe(argv: string[]): string[] {
  return ['/bin/sh', '-c', 'cat | "$0" "$@"', ...argv];
}

/** `ip -j route` writes a host route without its prefix and the default route as `default`. */
function rangeOf(dst: string, family: string): string {
  if (dst === 'default') return family === '-6' ? '::/0' : '0.0.0.0/0';
  return dst.includes('/') ? dst : `${dst}/${family === '-6' ? 128 : 32}`;
}

const KERNEL_LACKS_WIREGUARD = /Unknown device type|not supported/i;

export function createWireguard(options: WireguardOptions = {}) {
  const searchPath = options.searchPath ?? DEFAULT_SEARCH_PATH;
  const env = { PATH: searchPath, LANG: 'C' };

  /** ip and wg are always needed; wireguard-go only when the interface is not the kernel's. */
  function bin() {
    const ip = findBinary(['ip'], undefined, searchPath);
    if (!ip)
      throw wireguardUnavailable(`WireGuard gateways need ip (Debian package iproute2), not found on ${searchPath}`);
    const wg = findBinary(['wg'], undefined, searchPath);
    if (!wg)
      throw wireguardUnavailable(
        `WireGuard gateways need wg (Debian package wireguard-tools), not found on ${searchPath}`,
      );
    return { ip, wg, wireguardGo: findBinary(['wireguard-go'], undefined, searchPath) };
  }

  async function cmd(argv: string[], input?: string): Promise<string> {
    options.trace?.(argv);
    return run(argv, { env, ...(input === undefined ? {} : { input }) });
  }

  const inNs = (ns: string, argv: string[]) => [bin().ip, 'netns', 'exec', ns, ...argv];
  const wg = (ref: WireguardRef, args: string[], input?: string) =>
    cmd(inNs(ref.namespace, input === undefined ? [bin().wg, ...args] : readingPipe([bin().wg, ...args])), input);
  const ipIn = (ref: WireguardRef, args: string[]) => cmd([bin().ip, '-n', ref.namespace, ...args]);

  function assertNamespace(ref: WireguardRef): void {
    if (!existsSync(`/run/netns/${ref.namespace}`))
      throw new Error(`network namespace ${ref.namespace} does not exist (ip netns add ${ref.namespace})`);
  }

  /** The interface in `namespace` (null: the machine's own namespace), or null when there is none. */
  async function linkIn(namespace: string | null, interfaceName: string): Promise<LinkInfo | null> {
    const args = ['-d', '-j', 'link', 'show', 'dev', interfaceName];
    try {
      const [info] = JSON.parse(
        await cmd(namespace === null ? [bin().ip, ...args] : [bin().ip, '-n', namespace, ...args]),
      ) as LinkInfo[];
      return info ?? null;
    } catch (err) {
      if (/does not exist|Cannot find device/i.test((err as Error).message)) return null;
      throw err;
    }
  }

  const link = (ref: WireguardRef) => linkIn(ref.namespace, ref.interfaceName);

  async function answers(ref: WireguardRef): Promise<boolean> {
    try {
      await wg(ref, ['show', ref.interfaceName, 'listen-port']);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Deletes the interface (if there is one) and stops its wireguard-go (if there is one). A
   * host-socket interface may also sit in the machine's namespace, made but not yet moved
   * when a worker died: that one goes too.
   */
  async function remove(ref: WireguardRef): Promise<void> {
    const pid = wireguardGoPid(ref.interfaceName);
    let deleted = false;
    if (existsSync(`/run/netns/${ref.namespace}`) && (await link(ref)) !== null) {
      await ipIn(ref, ['link', 'del', 'dev', ref.interfaceName]);
      deleted = true;
    }
    if (ref.socket === 'host' && (await linkIn(null, ref.interfaceName)) !== null) {
      await cmd([bin().ip, 'link', 'del', 'dev', ref.interfaceName]);
      deleted = true;
    }
    await stopWireguardGo(pid, ref.interfaceName, { interfaceDeleted: deleted });
  }

  /** A host-socket interface, born in the machine's namespace, moves into its own. */
  async function moveIn(ref: WireguardRef): Promise<void> {
    if (ref.socket === 'host') await cmd([bin().ip, 'link', 'set', 'dev', ref.interfaceName, 'netns', ref.namespace]);
  }

  /** The interface, adopted when it answers, otherwise (re)made: the kernel's first unless told. */
  async function ensureInterface(ref: WireguardRef): Promise<void> {
    const existing = await link(ref);
    if (existing && (await answers(ref))) return;
    await remove(ref); // a half-made interface, or a wireguard-go without one
    const born = ref.socket === 'host' ? null : ref.namespace;
    if (options.implementation !== 'userspace') {
      try {
        const add = ['link', 'add', 'dev', ref.interfaceName, 'type', 'wireguard'];
        await (born === null ? cmd([bin().ip, ...add]) : ipIn(ref, add));
        await moveIn(ref);
        return;
      } catch (err) {
        if (!KERNEL_LACKS_WIREGUARD.test((err as Error).message)) throw err;
      }
    }
    const { ip, wireguardGo } = bin();
    if (!wireguardGo)
      throw wireguardUnavailable(
        `this kernel has no WireGuard and wireguard-go (Debian package wireguard-go) is not installed on ${searchPath}`,
      );
    await startWireguardGo({
      ip,
      wireguardGo,
      namespace: born,
      interfaceName: ref.interfaceName,
      env,
      trace: options.trace,
      // its control socket (/run/wireguard) answers from every namespace
      ready: () => answers(ref),
    });
    await moveIn(ref);
  }

  async function addresses(ref: WireguardRef): Promise<string[]> {
    const [info] = JSON.parse(await ipIn(ref, ['-j', 'addr', 'show', 'dev', ref.interfaceName])) as AddrInfo[];
    return (info?.addr_info ?? []).filter((a) => a.scope !== 'link').map((a) => `${a.local}/${a.prefixlen}`);
  }

  /** Routes through the interface that someone put there (not the kernel's own for an address). */
  async function routes(ref: WireguardRef): Promise<string[]> {
    const out: string[] = [];
    for (const family of ['-4', '-6']) {
      const list = JSON.parse(
        await ipIn(ref, [family, '-j', 'route', 'show', 'dev', ref.interfaceName]),
      ) as RouteInfo[];
      for (const r of list) if (r.protocol !== 'kernel') out.push(rangeOf(r.dst, family));
    }
    return out;
  }

  /** Makes the set `current` equal to `wanted`: `add` what is missing, `del` what is extra. */
  async function reconcile(
    current: string[],
    wanted: string[],
    add: (x: string) => Promise<unknown>,
    del: (x: string) => Promise<unknown>,
  ): Promise<void> {
    for (const x of current) if (!wanted.includes(x)) await del(x);
    for (const x of wanted) if (!current.includes(x)) await add(x);
  }

  async function inspect(ref: WireguardRef): Promise<WireguardGatewayState | null> {
    checkRef(ref);
    if (!existsSync(`/run/netns/${ref.namespace}`)) return null;
    const info = await link(ref);
    if (!info || !(await answers(ref))) return null;
    const kernel = info.linkinfo?.info_kind === 'wireguard';
    return {
      namespace: ref.namespace,
      interfaceName: ref.interfaceName,
      kind: kernel ? 'kernel' : 'userspace',
      pid: kernel ? null : wireguardGoPid(ref.interfaceName),
      up: info.flags.includes('UP'),
      listenPort: Number((await wg(ref, ['show', ref.interfaceName, 'listen-port'])).trim()),
      publicKey: (await wg(ref, ['show', ref.interfaceName, 'public-key'])).trim(),
      addresses: await addresses(ref),
      routes: await routes(ref),
      peers: parseAllowedIps(await wg(ref, ['show', ref.interfaceName, 'allowed-ips'])),
    };
  }

  return {
    /**
     * Creates or adopts the gateway and makes it exactly the spec: key, port and the whole
     * peer set (`wg syncconf`: peers not listed are removed, unchanged ones keep their
     * sessions), its address, link up, its routes.
     */
    async ensureGateway(spec: WireguardGatewaySpec): Promise<WireguardGatewayState> {
      checkSpec(spec);
      bin();
      assertNamespace(spec);
      await ensureInterface(spec);
      await wg(spec, ['syncconf', spec.interfaceName, '/dev/stdin'], gatewayConf(spec)).catch((err: Error) => {
        // wg quotes a line it refuses: the key never goes further than this process
        throw new Error(err.message.split(spec.privateKey).join('[private key]'));
      });
      await reconcile(
        await addresses(spec),
        [spec.address],
        (a) => ipIn(spec, ['addr', 'add', a, 'dev', spec.interfaceName]),
        (a) => ipIn(spec, ['addr', 'del', a, 'dev', spec.interfaceName]),
      );
      await ipIn(spec, ['link', 'set', 'dev', spec.interfaceName, 'up']);
      await reconcile(
        await routes(spec),
        spec.routes,
        (r) => ipIn(spec, ['route', 'replace', r, 'dev', spec.interfaceName]),
        (r) => ipIn(spec, ['route', 'del', r, 'dev', spec.interfaceName]),
      );
      const state = (await inspect(spec))!;
      options.logger?.info(
        {
          namespace: spec.namespace,
          interface: spec.interfaceName,
          kind: state.kind,
          port: spec.listenPort,
          peers: spec.peers.length,
        },
        'wireguard gateway ready',
      );
      return state;
    },

    /** Adds (or updates) one peer: it may send from, and is sent, exactly its address and the ranges behind it. */
    async addPeer(ref: WireguardRef, peer: WireguardPeer): Promise<void> {
      checkRef(ref);
      checkPeer(peer);
      await wg(ref, ['set', ref.interfaceName, 'peer', peer.publicKey, 'allowed-ips', peerAllowedIps(peer).join(',')]);
    },

    /** Removes one peer: its session ends at once (nothing it sends is accepted, nothing goes to it). */
    async removePeer(ref: WireguardRef, publicKey: string): Promise<void> {
      checkRef(ref);
      checkPeer({ publicKey, address: '0.0.0.0' });
      await wg(ref, ['set', ref.interfaceName, 'peer', publicKey, 'remove']);
    },

    /** What runs for the gateway, or null when nothing answers (no private key is ever read back). */
    inspect,

    /** Removes the interface, its wireguard-go and its socket; nothing there is fine. */
    async teardown(ref: WireguardRef): Promise<void> {
      checkRef(ref);
      bin();
      await remove(ref);
      options.logger?.info({ namespace: ref.namespace, interface: ref.interfaceName }, 'wireguard gateway removed');
    },
  };
}

export type Wireguard = ReturnType<typeof createWireguard>;
