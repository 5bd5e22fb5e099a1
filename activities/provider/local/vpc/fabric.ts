import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { cidr4, formatAddress4, isAttachmentFqdn, last, parseCidr4 } from '../../../../domain/vpc';
import type { AppVpcAttachment } from '../../../../platform/drivers/apps';
import { ip, NETNS_DIR } from '../network/namespace';
import { plugInterfaces, routerNamespace, subnetBridge, vpcRunDir } from './names';
import { installedPeerRoutes } from './peer-routes';
import { publishName, publishedNames, withdrawName } from './resolver';

/**
 * Workloads on VPC subnets. A plug is one workload's link into one VPC: a veth pair whose
 * router end sits on the subnet's bridge in the VPC's router namespace and whose other end
 * is in the workload's own namespace, with an address of the subnet. Inside the workload the
 * VPC's range and the router's peer-route ranges go via the subnet's gateway (subnet + 1, on
 * the bridge); a private subnet's workload sends everything there (its default route), and
 * keeps only its link to the platform's gateway (DNS, the ingress's replies). Workloads of
 * one subnet meet on the bridge; of two subnets, through the router.
 *
 * Addresses: a workload takes its attachment's recorded address unless another workload
 * (an older replica during a rollout) holds it, else the lowest free one of the subnet.
 * The attachment's fqdn is published, per plug, in the VPC resolver's hosts folder, so it
 * answers every live replica's address and follows them across restarts.
 *
 * State is the kernel's plus a map of live plugs in this process (a restarted Berth starts
 * with no plugged workload: the workload network sweeps the old namespaces, and with them
 * the links go).
 */

interface Plugged {
  vpcUuid: string;
  attachmentUuid: string;
  address: string;
  routerIf: string;
  nameKey: string;
  fqdn: string | null;
}

/** The addresses the database holds for a VPC's attachments (the driver's query). */
export type ReservedAddresses = (vpcUuid: string) => Promise<Map<string, string>>;

export class VpcFabric {
  private readonly plugged = new Map<string, Plugged[]>();
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(
    readonly tag: string,
    private readonly reserved: ReservedAddresses,
    private readonly logger: Logger,
  ) {}

  /** Runs `fn` after every earlier call for the same VPC (address choices never race). */
  serialize<T>(vpcUuid: string, fn: () => Promise<T>): Promise<T> {
    const next = (this.queues.get(vpcUuid) ?? Promise.resolve()).then(fn, fn);
    this.queues.set(
      vpcUuid,
      next.catch(() => undefined),
    );
    return next;
  }

  /** Addresses live workloads hold in the VPC now. */
  private liveAddresses(vpcUuid: string): Set<string> {
    const out = new Set<string>();
    for (const list of this.plugged.values()) for (const p of list) if (p.vpcUuid === vpcUuid) out.add(p.address);
    return out;
  }

  /**
   * The lowest free address of the subnet for `attachmentUuid`: not the network, its gateway
   * (+1) or broadcast, and held neither by a live workload nor by another attachment.
   */
  async freeAddress(
    vpcUuid: string,
    subnetCidrV4: string,
    attachmentUuid: string,
    prefer?: string | null,
  ): Promise<string> {
    const subnet = cidr4(subnetCidrV4);
    const live = this.liveAddresses(vpcUuid);
    const others = new Set(
      [...(await this.reserved(vpcUuid)).entries()].filter(([uuid]) => uuid !== attachmentUuid).map(([, a]) => a),
    );
    if (prefer && !live.has(prefer) && !others.has(prefer)) return prefer;
    for (let n = subnet.base + 2; n < last(subnet); n++) {
      const a = formatAddress4(n);
      if (!live.has(a) && !others.has(a)) return a;
    }
    throw new Error(`no free address in subnet ${subnetCidrV4}`);
  }

  /** Plugs a workload (its namespace `ns`) into each subnet it is attached to. A failure removes its plugs. */
  async plug(workload: string, ns: string, attachments: AppVpcAttachment[]): Promise<void> {
    try {
      for (const a of attachments) await this.serialize(a.vpcUuid, () => this.plugOne(workload, ns, a));
    } catch (err) {
      await this.unplug(workload);
      throw err;
    }
  }

  private async plugOne(workload: string, ns: string, a: AppVpcAttachment): Promise<void> {
    const router = routerNamespace(this.tag, a.vpcUuid);
    if (!existsSync(path.join(NETNS_DIR, router)))
      throw new Error(`VPC ${a.vpcUuid} has no router on this machine (is the VPC active?)`);
    const subnet = cidr4(a.subnetCidrV4);
    const gateway = formatAddress4(subnet.base + 1);
    const bridge = subnetBridge(a.subnetCidrV4);
    await ensureBridge(router, bridge, `${gateway}/${subnet.prefix}`);
    const address = await this.freeAddress(a.vpcUuid, a.subnetCidrV4, a.attachmentUuid, a.address);
    const ifs = plugInterfaces(workload, a.vpcUuid);
    await ip(['-n', router, 'link', 'del', ifs.router]).catch(() => {}); // a previous start's
    // the workload's MAC comes from its address: whoever holds an address next (a restarted
    // replica) answers at the same MAC, and the neighbours' ARP entries stay true
    const mac = addressMac(address);
    await ip([
      '-n',
      router,
      'link',
      'add',
      ifs.router,
      'type',
      'veth',
      'peer',
      'name',
      ifs.workload,
      'address',
      mac,
      'netns',
      ns,
    ]);
    const entry: Plugged = {
      vpcUuid: a.vpcUuid,
      attachmentUuid: a.attachmentUuid,
      address,
      routerIf: ifs.router,
      nameKey: `${a.attachmentUuid}--${workload}`,
      fqdn: a.fqdn,
    };
    this.plugged.set(workload, [...(this.plugged.get(workload) ?? []), entry]);
    await ip(['-n', router, 'link', 'set', ifs.router, 'master', bridge, 'up']);
    const routes = [`route replace ${a.vpcCidrV4} via ${gateway} dev ${ifs.workload}`];
    for (const { cidr: range } of await installedPeerRoutes(router))
      if (parseCidr4(range)) routes.push(`route replace ${range} via ${gateway} dev ${ifs.workload}`);
    if (!a.public) routes.push(`route replace default via ${gateway} dev ${ifs.workload}`);
    await ip(
      ['-n', ns, '-batch', '-'],
      [`addr add ${address}/${subnet.prefix} dev ${ifs.workload}`, `link set ${ifs.workload} up`, ...routes, ''].join(
        '\n',
      ),
    );
    if (a.fqdn) publishName(vpcRunDir(this.tag, a.vpcUuid), entry.nameKey, a.fqdn, address);
    this.logger.info({ workload, vpc: a.vpcUuid, address }, 'workload plugged into its VPC subnet');
  }

  /** Takes a workload off every VPC (its names withdrawn, its links removed). Idempotent. */
  async unplug(workload: string): Promise<void> {
    const list = this.plugged.get(workload) ?? [];
    this.plugged.delete(workload);
    for (const p of list) await this.remove(p);
  }

  /** Takes every workload off one attachment at once (detach: the interface goes before the restart). */
  async unplugAttachment(attachmentUuid: string): Promise<void> {
    for (const [workload, list] of this.plugged) {
      const [gone, kept] = [
        list.filter((p) => p.attachmentUuid === attachmentUuid),
        list.filter((p) => p.attachmentUuid !== attachmentUuid),
      ];
      this.plugged.set(workload, kept);
      for (const p of gone) await this.remove(p);
    }
  }

  /** Forgets every plug of a VPC whose router goes (its links go with the router). */
  forgetVpc(vpcUuid: string): void {
    for (const [workload, list] of this.plugged)
      this.plugged.set(
        workload,
        list.filter((p) => p.vpcUuid !== vpcUuid),
      );
  }

  /** Withdraws names no live workload holds (a previous run's). */
  withdrawStaleNames(vpcUuid: string): void {
    const dir = vpcRunDir(this.tag, vpcUuid);
    const live = new Set([...this.plugged.values()].flat().map((p) => p.nameKey));
    for (const key of publishedNames(dir)) if (!live.has(key)) withdrawName(dir, key);
  }

  /**
   * What the platform's resolver answers a workload (`asker`, its name) for `name`: null when
   * it is not an attachment's fqdn (not the VPCs' to answer); else the addresses of the live
   * workloads with that fqdn in the VPCs the asker is plugged into, none for anyone else. So
   * an fqdn works with the system's resolver as well as through the VPC's own, and a workload
   * outside the VPC learns nothing (and the name never leaves the machine).
   */
  answer(asker: string, name: string): string[] | null {
    if (!isAttachmentFqdn(name)) return null;
    const vpcs = new Set((this.plugged.get(asker) ?? []).map((p) => p.vpcUuid));
    const wanted = name.toLowerCase().replace(/\.$/, '');
    return [...this.plugged.values()]
      .flat()
      .filter((p) => vpcs.has(p.vpcUuid) && p.fqdn === wanted)
      .map((p) => p.address)
      .sort();
  }

  /** The VPC's plugged workloads now: workload name -> address (tests, the banner). */
  members(vpcUuid: string): Map<string, string> {
    const out = new Map<string, string>();
    for (const [workload, list] of this.plugged)
      for (const p of list) if (p.vpcUuid === vpcUuid) out.set(workload, p.address);
    return out;
  }

  private async remove(p: Plugged): Promise<void> {
    withdrawName(vpcRunDir(this.tag, p.vpcUuid), p.nameKey);
    const router = routerNamespace(this.tag, p.vpcUuid);
    if (existsSync(path.join(NETNS_DIR, router))) await ip(['-n', router, 'link', 'del', p.routerIf]).catch(() => {});
  }
}

/**
 * The subnet's bridge with its gateway address, made once. Its MAC address is set (a
 * bridge otherwise takes the lowest of its ports', which changes as workloads come and go,
 * and the others' ARP entries for the gateway would point at a MAC that is gone).
 */
async function ensureBridge(router: string, bridge: string, gatewayWithPrefix: string): Promise<void> {
  const exists = () =>
    ip(['-n', router, 'link', 'show', 'dev', bridge]).then(
      () => true,
      () => false,
    );
  if (!(await exists())) {
    await ip(['-n', router, 'link', 'add', bridge, 'address', bridgeMac(bridge), 'type', 'bridge']).catch(
      async (err: Error) => {
        if (!(await exists())) throw err; // a concurrent plug made it
      },
    );
  }
  await ip(
    ['-n', router, '-batch', '-'],
    [`addr replace ${gatewayWithPrefix} dev ${bridge}`, `link set ${bridge} up`, ''].join('\n'),
  );
}

/** A locally administered unicast MAC address for a workload's IPv4 address (02:b0 and its four bytes). */
const addressMac = (address: string): string =>
  ['02', 'b0', ...address.split('.').map((b) => Number(b).toString(16).padStart(2, '0'))].join(':');

/** A locally administered unicast MAC address from the bridge's name. */
const bridgeMac = (bridge: string): string =>
  `02:${createHash('sha256').update(bridge).digest('hex').slice(0, 10).match(/../g)!.join(':')}`;
