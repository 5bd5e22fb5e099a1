import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findBinary } from '../../activities/provider/local/data/commands';
import { vpcWireguardGateway } from '../../activities/provider/local/vpn/vpc-wireguard';
import { createWireguard, type Wireguard } from '../../activities/provider/local/vpn/wireguard';
import {
  gatewayConf,
  parseAllowedIps,
  type WireguardGatewaySpec,
} from '../../activities/provider/local/vpn/wireguard-conf';
import { controlSocket, wireguardGoPid } from '../../activities/provider/local/vpn/wireguard-go';
import { generateWireguardKeyPair } from '../../domain/wireguard';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { linkedNamespaces, namespaceExists, tcpEcho, tcpRoundTrip, type LinkedNamespaces } from '../support/netns';
import { eventually, startStack, type TestStack } from '../support/stack';
import { activeVpc, auth } from '../support/vpc';
import { wireguardClient, wireguardTestSkipReason, type WireguardClient } from '../support/wireguard-client';

const skipReason = wireguardTestSkipReason();
if (skipReason) console.warn(`WireGuard tests skipped: ${skipReason}`);
const describeReal = skipReason ? describe.skip : describe;

const ECHO_PORT = 7070;
const CLIENT_IF = 'bwgtestclient0';

/** A search path holding only the named binaries (links to the real ones). */
function pathWith(names: string[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'berth-wg-path-'));
  for (const name of names) {
    const real = findBinary([name], undefined);
    if (real) symlinkSync(real, path.join(dir, name));
  }
  return dir;
}

const linkExists = (ns: string, ifname: string) => {
  try {
    execFileSync('ip', ['-n', ns, 'link', 'show', 'dev', ifname], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

describe('WireGuard gateways: configuration and refusals', () => {
  it('configures exactly the given peers, each allowed its own address; reads peers back from wg', () => {
    const [a, b] = [generateWireguardKeyPair().publicKey, generateWireguardKeyPair().publicKey];
    const conf = gatewayConf({
      privateKey: generateWireguardKeyPair().privateKey,
      listenPort: 51820,
      peers: [
        { publicKey: a, address: '10.224.0.129' },
        { publicKey: b, address: 'fd00::81' },
      ],
    });
    expect(conf.match(/\[Peer\]/g)).toHaveLength(2);
    expect(conf).toContain(`PublicKey = ${a}\nAllowedIPs = 10.224.0.129/32`);
    expect(conf).toContain(`PublicKey = ${b}\nAllowedIPs = fd00::81/128`);
    expect(parseAllowedIps(`${a}\t10.224.0.129/32\n${b}\t(none)\n`)).toEqual([
      { publicKey: a, address: '10.224.0.129' },
      { publicKey: b, address: '' },
    ]);
  });

  it('without wg, ensureGateway fails for good and names the package to install', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'berth-wg-empty-'));
    try {
      const wireguard = createWireguard({ searchPath: empty });
      const attempt = wireguard.ensureGateway({
        namespace: 'berth-none',
        interfaceName: 'bwg000000000000',
        listenPort: 51820,
        privateKey: generateWireguardKeyPair().privateKey,
        address: '10.224.0.3/32',
        routes: ['10.224.0.128/25'],
        peers: [],
      });
      await expect(attempt).rejects.toMatchObject({
        type: 'WireguardUnavailable',
        nonRetryable: true,
        message: expect.stringMatching(/need (ip|wg) \(Debian package (iproute2|wireguard-tools)\)/),
      });
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('refuses a malformed spec before running anything, without echoing the private key', async () => {
    const ran: string[][] = [];
    const wireguard = createWireguard({ trace: (argv) => ran.push(argv) });
    const good: WireguardGatewaySpec = {
      namespace: 'berth-x',
      interfaceName: 'bwg000000000000',
      listenPort: 51820,
      privateKey: generateWireguardKeyPair().privateKey,
      address: '10.224.0.3/32',
      routes: [],
      peers: [],
    };
    for (const [bad, message] of [
      [{ namespace: 'a/b' }, /namespace/],
      [{ interfaceName: 'much-too-long-interface' }, /interface/],
      [{ listenPort: 70000 }, /UDP port/],
      [{ privateKey: 'not a key\nListenPort = 1' }, /private key is not/],
      [{ address: '10.224.0.3' }, /prefix/],
      [{ routes: ['10.0.0.0/33'] }, /range/],
      [{ peers: [{ publicKey: 'x', address: '10.224.0.129' }] }, /public key/],
    ] as Array<[Partial<WireguardGatewaySpec>, RegExp]>) {
      const err = await wireguard.ensureGateway({ ...good, ...bad }).catch((e: Error) => e);
      expect(String(err)).toMatch(message);
      expect(String(err)).not.toContain('not a key');
    }
    expect(ran).toEqual([]);
  });
});

describeReal('WireGuard gateways: wireguard-go in a network namespace, a real client', () => {
  let stack: TestStack;
  let ws: Workspace;
  let net: LinkedNamespaces;
  let wireguard: Wireguard;
  let echo: { close(): Promise<void> };
  let client: WireguardClient | undefined;
  let gateway: WireguardGatewaySpec;
  let user: { uuid: string; public_key: string; address_v4: string };
  const ran: string[][] = [];
  const logged: unknown[] = [];
  let gatewayPrivateKey: string;

  beforeAll(async () => {
    stack = await startStack();
    ws = await seedWorkspace(stack.ds);
    await stack.startWorker();
    net = linkedNamespaces('wg');
    wireguard = createWireguard({
      implementation: 'userspace',
      trace: (argv) => ran.push(argv),
      logger: { info: (o: unknown) => logged.push(o) } as never,
    });
    echo = await tcpEcho(net.a, ECHO_PORT);
  });

  afterAll(async () => {
    // whatever a failed test left: nothing may outlive the suite
    await wireguard?.teardown({ namespace: net.b, interfaceName: CLIENT_IF }).catch(() => {});
    if (gateway) await wireguard?.teardown(gateway).catch(() => {});
    await echo?.close();
    net?.remove();
    await stack?.close();
  });

  const base = (vpcUuid: string) => `/api/v1/vpcs/${vpcUuid}`;

  async function activeChild(vpcUuid: string, kind: 'vpn_gateways' | 'vpn_users', body: object): Promise<any> {
    const created = await stack.http
      .post(`${base(vpcUuid)}/${kind}`)
      .set(auth(ws.ownerToken))
      .send(body);
    expect(created.status).toBe(201);
    return eventually(
      async () => {
        const list = await stack.http.get(`${base(vpcUuid)}/${kind}`).set(auth(ws.ownerToken));
        return list.body.find((x: any) => x.uuid === created.body.uuid && x.status === 'active');
      },
      { what: `${kind} ${created.body.uuid} active` },
    );
  }

  const throughTunnel = () => tcpRoundTrip(net.b, gateway.address.split('/')[0]!, ECHO_PORT);
  /** A client whose handshake went unanswered retries it every 5 seconds (WireGuard's rekey timeout). */
  const tunnelComesUp = () =>
    eventually(async () => (await throughTunnel()) || null, {
      what: 'a round trip through the tunnel',
      timeoutMs: 15_000,
    });

  it('VPN-06 the configuration the API hands out brings a real tunnel up to the gateway; removing the peer cuts it at once', async () => {
    const vpc = await activeVpc(stack, ws);
    const gw = await activeChild(vpc.uuid, 'vpn_gateways', { kind: 'wireguard' });
    const [row] = await stack.ds.query(`SELECT private_key_sealed FROM vpc_vpn_gateways WHERE uuid = $1`, [gw.uuid]);
    gatewayPrivateKey = stack.secretBox.open(row.private_key_sealed);
    const port = Number(gw.endpoint.split(':').pop());
    gateway = vpcWireguardGateway({
      gatewayUuid: gw.uuid,
      namespace: net.a,
      listenPort: port,
      privateKey: gatewayPrivateKey,
      cidrV4: vpc.cidr_v4,
      users: [],
    });
    const up = await wireguard.ensureGateway(gateway);
    expect(up).toMatchObject({
      kind: 'userspace',
      up: true,
      listenPort: port,
      publicKey: gw.public_key,
      addresses: ['10.224.0.3/32'],
      routes: [vpc.vpn_pool_v4],
      peers: [],
    });
    expect(up.pid).toBe(wireguardGoPid(gateway.interfaceName));

    user = await activeChild(vpc.uuid, 'vpn_users', { name: 'laptop' });
    const config = await stack.http.get(`${base(vpc.uuid)}/vpn_users/${user.uuid}/config`).set(auth(ws.ownerToken));
    expect(config.status).toBe(200);
    client = await wireguardClient(net.b, CLIENT_IF, config.text, `${net.addressA}:${port}`);

    // The gateway does not know the device yet: nothing gets through (and nothing else routes there).
    expect(await throughTunnel()).toBe(false);
    const withUser = await wireguard.ensureGateway({
      ...gateway,
      peers: [{ publicKey: user.public_key, address: user.address_v4 }],
    });
    expect(withUser.peers).toEqual([{ publicKey: user.public_key, address: user.address_v4 }]);
    expect(await tunnelComesUp()).toBe(true);
    expect(client.latestHandshake()).toBeGreaterThan(0);

    await wireguard.removePeer(gateway, user.public_key);
    expect((await wireguard.inspect(gateway))!.peers).toEqual([]);
    expect(await throughTunnel()).toBe(false);
  });

  it('adds a peer alone, is idempotent and adopts what runs (a restarted worker: a fresh module) without cutting the session', async () => {
    const peer = { publicKey: user.public_key, address: user.address_v4 };
    await wireguard.addPeer(gateway, peer);
    expect(await tunnelComesUp()).toBe(true);
    const spec = { ...gateway, peers: [peer] };
    const first = await wireguard.ensureGateway(spec);
    const again = await wireguard.ensureGateway(spec);
    const afterRestart: string[][] = [];
    const restarted = createWireguard({ trace: (argv) => ran.push(argv) && afterRestart.push(argv) });
    const adopted = await restarted.ensureGateway(spec);
    expect(again).toEqual(first);
    expect(adopted).toEqual(first);
    expect(adopted.pid).not.toBeNull();
    expect(afterRestart.some((argv) => argv.some((a) => a.endsWith('wireguard-go')))).toBe(false);
    expect(await throughTunnel()).toBe(true);
    // The whole peer set: a device left out is removed the same way, at once.
    await restarted.ensureGateway(gateway);
    expect(await throughTunnel()).toBe(false);
  });

  it('replaces a same-named interface that is not a working WireGuard, and never puts the private key in an argv or a log', async () => {
    const ref = { namespace: net.a, interfaceName: 'bwgtestdummy0' };
    execFileSync('ip', [
      '-n',
      net.a,
      'link',
      'add',
      ref.interfaceName,
      'type',
      'veth',
      'peer',
      'name',
      'bwgtestdummy1',
    ]);
    const spec: WireguardGatewaySpec = {
      ...ref,
      listenPort: 51821,
      privateKey: generateWireguardKeyPair().privateKey,
      address: '10.99.0.1/32',
      routes: ['10.99.0.128/25', '10.99.1.1/32'],
      peers: [],
    };
    const state = await wireguard.ensureGateway(spec);
    expect(state).toMatchObject({ kind: 'userspace', listenPort: 51821, routes: ['10.99.0.128/25', '10.99.1.1/32'] });
    // a changed spec: the old address and route go
    const moved = await wireguard.ensureGateway({ ...spec, address: '10.99.0.2/32', routes: ['10.99.0.128/25'] });
    expect(moved).toMatchObject({ addresses: ['10.99.0.2/32'], routes: ['10.99.0.128/25'], pid: state.pid });
    await wireguard.teardown(ref);
    expect(linkExists(net.a, ref.interfaceName)).toBe(false);
    for (const key of [spec.privateKey, gatewayPrivateKey]) {
      expect(JSON.stringify(ran)).not.toContain(key);
      expect(JSON.stringify(logged)).not.toContain(key);
    }
    expect(ran.some((argv) => argv.includes('syncconf'))).toBe(true);
  });

  it('without wireguard-go (and no kernel WireGuard asked for), fails for good naming the package, leaving nothing', async () => {
    const noGo = pathWith(['ip', 'wg']);
    try {
      const limited = createWireguard({ searchPath: noGo, implementation: 'userspace' });
      const ref = { namespace: net.a, interfaceName: 'bwgtestnogo0' };
      await expect(limited.ensureGateway({ ...gateway, ...ref, listenPort: 51822, peers: [] })).rejects.toMatchObject({
        type: 'WireguardUnavailable',
        message: expect.stringContaining('Debian package wireguard-go'),
      });
      expect(linkExists(net.a, ref.interfaceName)).toBe(false);
    } finally {
      rmSync(noGo, { recursive: true, force: true });
    }
  });

  it('teardown stops a wireguard-go whose namespace was deleted under it', async () => {
    const ns = `${net.a}-gone`;
    execFileSync('ip', ['netns', 'add', ns]);
    const ref = { namespace: ns, interfaceName: 'bwgtestgone0' };
    try {
      const state = await wireguard.ensureGateway({ ...gateway, ...ref, peers: [] });
      execFileSync('ip', ['netns', 'del', ns]);
      expect(wireguardGoPid(ref.interfaceName)).toBe(state.pid); // the process holds the namespace alive
    } finally {
      if (namespaceExists(ns)) execFileSync('ip', ['netns', 'del', ns]);
      await wireguard.teardown(ref);
    }
    expect(wireguardGoPid(ref.interfaceName)).toBeNull();
    expect(existsSync(controlSocket(ref.interfaceName))).toBe(false);
  });

  it('teardown leaves no interface, process or socket; the namespaces go with the test', async () => {
    const pids = [wireguardGoPid(gateway.interfaceName), wireguardGoPid(CLIENT_IF)];
    expect(pids.every((p) => p !== null)).toBe(true);
    await wireguard.teardown(gateway);
    await wireguard.teardown({ namespace: net.b, interfaceName: CLIENT_IF });
    await wireguard.teardown(gateway); // again: nothing there is fine
    expect(await throughTunnel()).toBe(false);
    for (const [ns, ifname] of [
      [net.a, gateway.interfaceName],
      [net.b, CLIENT_IF],
    ] as const) {
      expect(linkExists(ns, ifname)).toBe(false);
      expect(wireguardGoPid(ifname)).toBeNull();
      expect(existsSync(controlSocket(ifname))).toBe(false);
    }
    // ended and reaped, not zombies
    await eventually(async () => (pids.every((pid) => !existsSync(`/proc/${pid}`)) ? true : null), {
      what: 'the wireguard-go processes reaped',
    });
    net.remove();
    expect([namespaceExists(net.a), namespaceExists(net.b)]).toEqual([false, false]);
  });
});
