import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import { run } from '../data/commands';
import {
  formatCidr,
  gatewayOf,
  ipToNumber,
  numberToIp,
  parseCidr,
  workloadAddresses,
  type Cidr,
} from '../../../../platform/workload-addresses';
import { InternalResolver } from './dns';
import { claimBlock, releaseBlock } from './block';
import { forwardAtGateway } from './forwarder';
import { hostInterface, IF_PREFIX, ip, makeNamespace, NETNS_DIR, removeNamespace } from './namespace';
import { policyScript } from './policy';
import type { Address } from '../sandbox/launcher';

/**
 * The workload network of the local driver: every workload (an app replica, a cron run, a
 * release-phase command, a build step) runs in a network namespace of its own, with its own
 * loopback and port space, joined to the host by a veth pair and a /32 route (routed veths,
 * no bridge: every packet between two workloads crosses the host's forward hook, where the
 * policy of policy.ts decides). docs/decisions.md "Workload network" says why.
 *
 * One Berth instance holds one /22 block of the platform range, claimed with a blackhole
 * route (the kernel refuses a second claim: instances on one machine never collide) and
 * marked by its gateway address on the host's loopback, labelled with the instance's tag.
 * The gateway is where workloads find the resolver and the add-on servers; everything else
 * of the host is closed to them.
 *
 * Names carry the instance's tag (a hash of its data directory), so a restarted Berth finds
 * what it made: namespaces `berth-<tag>-<workload>`, host interfaces `bw<hash>`, the table
 * `inet berth_<tag>`.
 */

/** What the policy knows of a workload. */
export interface NetworkMember {
  /** The workspace whose network it is on (null: a build, which only goes out). */
  workspace: string | null;
  /** The app it belongs to (replicas, cron runs and release commands), else null. */
  app: string | null;
  /** Other apps of the workspace may connect to it (the app's `allow_connections`). */
  allowConnections: boolean;
  /** The add-on clusters it may reach (its app's attached add-ons). */
  clusters: string[];
  /** It serves under this name (an app replica: the app's `service_name`), else null. */
  serviceName: string | null;
}

/** A workload's place on the network: the launcher runs it inside `netnsPath`. */
export interface Attachment {
  name: string;
  netnsPath: string;
  address: string;
  gateway: string;
  /** The workload's /etc/resolv.conf: the resolver at the gateway. */
  resolvConf: string;
}

interface Joined extends Attachment {
  ns: string;
  hostIf: string;
  member: NetworkMember;
}

/** Files workloads see (their resolv.conf), one per instance. */
const RUN_DIR = '/run/berth';

/** Whether this machine can build the fabric: root, iproute2, nftables and nsenter. The reason when not. */
export async function fabricUnavailable(): Promise<string | null> {
  if (process.getuid?.() !== 0) return 'Berth does not run as root';
  for (const tool of [
    ['ip', '-V'],
    ['nft', '--version'],
    ['nsenter', '--version'],
  ])
    if (
      !(await run(tool).then(
        () => true,
        () => false,
      ))
    )
      return `${tool[0]} is missing (install iproute2, nftables, util-linux)`;
  return null;
}

/** The tag in the names of what one Berth instance makes (namespaces, its table, its gateway's label): from its data directory. */
export const instanceTag = (dataDir: string): string =>
  createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 8);

export class WorkloadNetwork {
  private readonly joined = new Map<string, Joined>();
  /** The same workloads by address: the resolver asks whose an address is on every query. */
  private readonly byAddress = new Map<string, Joined>();
  private readonly servers = new Map<string, number>();
  private readonly used = new Set<number>();
  private applying: Promise<unknown> = Promise.resolve();
  readonly gateway: string;
  readonly table: string;

  private constructor(
    readonly tag: string,
    readonly range: Cidr,
    readonly block: Cidr,
    private readonly logger: Logger,
    readonly resolvConf: string,
    readonly platformServices: Address[],
  ) {
    this.gateway = gatewayOf(block);
    this.table = `berth_${tag}`;
    this.resolver = new InternalResolver({
      lookup: (_listener, name, client) => {
        const asker = this.byAddress.get(client);
        // a VPC attachment's fqdn, for a workload plugged into that VPC (vpc/fabric.ts)
        const inVpc = asker && this.vpcNames ? this.vpcNames(asker.name, name) : null;
        if (inVpc) return inVpc;
        const workspace = asker?.member.workspace ?? null;
        if (!workspace || name.includes('.')) return null;
        const found = this.addressesOf(workspace, name);
        return found.length > 0 ? found : null;
      },
      logger,
    });
  }

  /** Answers workloads' names at the gateway: an app's service_name, within the asker's workspace. */
  private readonly resolver: InternalResolver;
  /** VPC names (the asker's workload name, the name asked): their addresses, [] for none, null when the name is not a VPC's. */
  vpcNames: ((asker: string, name: string) => string[] | null) | null = null;
  private readonly forwarders: Server[] = [];

  /**
   * Claims (or takes back, after a restart) the instance's block, turns on IPv4 forwarding
   * (the forward hook is where the policy applies; workloads' egress is NAT'ed) and writes
   * the policy. `dataDir` names the instance.
   */
  static async open(options: {
    dataDir: string;
    range: string;
    logger: Logger;
    /**
     * Services on the machine's loopback that workloads use at the same address inside their
     * namespace (the embedded object store's endpoint): led to the gateway, where Berth
     * forwards them to the service.
     */
    platformServices?: Address[];
  }): Promise<WorkloadNetwork> {
    const tag = instanceTag(options.dataDir);
    const range = parseCidr(options.range);
    const block = await claimBlock(options.dataDir, range, tag);
    await run(['sysctl', '-q', '-w', 'net.ipv4.ip_forward=1']);
    // readable by every app's uid (bubblewrap, run as the app, binds it): not under the data directory
    mkdirSync(RUN_DIR, { recursive: true, mode: 0o755 });
    const resolvConf = path.join(RUN_DIR, `${tag}.resolv.conf`);
    writeFileSync(resolvConf, `# written by Berth: the workload network's resolver\nnameserver ${gatewayOf(block)}\n`, {
      mode: 0o644,
    });
    const net = new WorkloadNetwork(tag, range, block, options.logger, resolvConf, options.platformServices ?? []);
    await net.adopt();
    await net.apply();
    await net.resolver.listen(net.gateway);
    for (const service of net.platformServices) net.forwarders.push(await forwardAtGateway(net.gateway, service));
    return net;
  }

  /** The kernel namespace name of a workload. */
  private nsName(name: string): string {
    return `berth-${this.tag}-${name}`;
  }

  private ownNamespaces(): string[] {
    const prefix = `berth-${this.tag}-`;
    try {
      return readdirSync(NETNS_DIR).filter((n) => n.startsWith(prefix));
    } catch {
      return [];
    }
  }

  /** Addresses of namespaces a previous run left are taken until they are swept. */
  private async adopt(): Promise<void> {
    for (const ns of this.ownNamespaces()) {
      const out = await ip(['-n', ns, '-4', '-o', 'addr', 'show', 'dev', 'eth0']).catch(() => '');
      const found = /inet (\d+\.\d+\.\d+\.\d+)\//.exec(out);
      if (found) this.used.add(ipToNumber(found[1]!));
    }
  }

  private allocate(): string {
    const { first, last } = workloadAddresses(this.block);
    for (let n = first; n <= last; n++) {
      if (!this.used.has(n)) {
        this.used.add(n);
        return numberToIp(n);
      }
    }
    throw new Error(`workload network: no free address in ${formatCidr(this.block)}`);
  }

  /**
   * The workload's namespace, made when it does not exist (idempotent by name: a replica
   * restarted after a crash gets the same address), with the policy rewritten for it before
   * it returns.
   */
  async attach(name: string, member: NetworkMember): Promise<Attachment> {
    const known = this.joined.get(name);
    if (known) {
      known.member = member;
      await this.apply();
      return known;
    }
    const ns = this.nsName(name);
    const hostIf = hostInterface(ns);
    const address = this.allocate();
    try {
      await makeNamespace({ ns, hostIf, address, gateway: this.gateway, platformServices: this.platformServices });
    } catch (err) {
      this.used.delete(ipToNumber(address));
      throw err;
    }
    const joined: Joined = {
      name,
      ns,
      hostIf,
      netnsPath: path.join(NETNS_DIR, ns),
      address,
      gateway: this.gateway,
      resolvConf: this.resolvConf,
      member,
    };
    this.joined.set(name, joined);
    this.byAddress.set(address, joined);
    await this.apply();
    return joined;
  }

  /** Removes the workload's namespace, interface and route (idempotent). */
  async detach(name: string): Promise<void> {
    const joined = this.joined.get(name);
    if (!joined) return;
    this.joined.delete(name);
    this.byAddress.delete(joined.address);
    await removeNamespace(joined.ns, joined.hostIf);
    this.used.delete(ipToNumber(joined.address));
    await this.apply();
  }

  /** An add-on server of `cluster` listens at the gateway on `port` (null: it stopped). */
  async publishServer(cluster: string, port: number | null): Promise<void> {
    if (port === null) this.servers.delete(cluster);
    else this.servers.set(cluster, port);
    await this.apply();
  }

  /** The addresses serving `serviceName` in `workspace` (the resolver's answer). */
  addressesOf(workspace: string, serviceName: string): string[] {
    return [...this.joined.values()]
      .filter((j) => j.member.workspace === workspace && j.member.serviceName === serviceName)
      .map((j) => j.address);
  }

  /** The workspace of the workload at `address`, if it is one of this instance's. */
  workspaceAt(address: string): string | null {
    return this.byAddress.get(address)?.member.workspace ?? null;
  }

  /**
   * Namespaces this instance made that nothing uses (no attachment, no process): removed.
   * `all`: those with processes too (Berth stops; what runs there is being stopped).
   */
  async sweep(options: { all?: boolean } = {}): Promise<number> {
    let removed = 0;
    const attached = new Set([...this.joined.values()].map((j) => j.ns));
    for (const ns of this.ownNamespaces()) {
      if (attached.has(ns)) continue;
      const pids = options.all ? '' : await ip(['netns', 'pids', ns]).catch(() => '');
      if (pids.trim()) continue;
      await removeNamespace(ns, hostInterface(ns));
      removed++;
    }
    this.used.clear();
    for (const j of this.joined.values()) this.used.add(ipToNumber(j.address));
    await this.adopt();
    return removed;
  }

  /** Everything this instance made goes: namespaces, interfaces, routes, the table, the block. */
  async close(): Promise<void> {
    await this.resolver.close();
    for (const f of this.forwarders) f.close();
    for (const name of [...this.joined.keys()]) await this.detach(name).catch(() => {});
    await this.sweep({ all: true }).catch(() => {});
    await this.applying.catch(() => {});
    await run(['nft', 'delete', 'table', 'inet', this.table]).catch(() => {});
    await releaseBlock(this.block);
    rmSync(this.resolvConf, { force: true });
  }

  /** Writes the policy for the workloads and servers known now (serialized; the last write wins). */
  private apply(): Promise<void> {
    const next = this.applying.then(() => run(['nft', '-f', '-'], { input: policyScript(this.policyState()) }));
    this.applying = next.catch((err: Error) =>
      this.logger.error({ err: err.message }, 'workload network: policy not written'),
    );
    return next.then(() => {});
  }

  private policyState() {
    const all = [...this.joined.values()];
    const peers: Array<[string, string]> = [];
    for (const src of all) {
      if (!src.member.workspace) continue;
      for (const dst of all) {
        if (dst === src || dst.member.workspace !== src.member.workspace || !dst.member.app) continue;
        if (dst.member.app === src.member.app || dst.member.allowConnections) peers.push([src.address, dst.address]);
      }
    }
    const services: Array<[string, number]> = [];
    for (const w of all)
      for (const cluster of w.member.clusters) {
        const port = this.servers.get(cluster);
        if (port !== undefined) services.push([w.address, port]);
      }
    return {
      table: this.table,
      block: formatCidr(this.block),
      range: formatCidr(this.range),
      gateway: this.gateway,
      peers,
      services,
      interfaces: all.map((j): [string, string] => [j.hostIf, j.address]),
      platformPorts: this.platformServices.map((s) => s.port),
      interfacePrefix: IF_PREFIX,
    };
  }
}
