import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { existsSync, readlinkSync } from 'node:fs';
import { localCapabilities } from '../../activities/provider/local/capabilities';
import { createVpcGateways } from '../../activities/provider/local/vpc/gateways';
import { openLocalVpcs, type VpcGateways } from '../../activities/provider/local/vpc/driver';
import { VpcFabric } from '../../activities/provider/local/vpc/fabric';
import { GATEWAY_PORTS } from '../../activities/provider/local/vpc/gateway-ports';
import { PEER_ROUTE_PROTOCOL, routerNamespace, vpcRunDir } from '../../activities/provider/local/vpc/names';
import { ensureResolver, publishName } from '../../activities/provider/local/vpc/resolver';
import { ensureRouter, removeRouter } from '../../activities/provider/local/vpc/router';
import { wireguardInterfaceName } from '../../activities/provider/local/vpn/wireguard-conf';
import { controlSocket, stopWireguardGo, wireguardGoPid } from '../../activities/provider/local/vpn/wireguard-go';
import type { NetworkDriver } from '../../platform/drivers/network';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import {
  hostLinkedNamespace,
  namespaceExists,
  resolveIn,
  tcpEcho,
  tcpRoundTrip,
  type HostLinkedNamespace,
} from '../support/netns';
import { eventually, expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';
import { activeVpc, auth } from '../support/vpc';
import { parseWireguard, wireguardClient, wireguardTestSkipReason } from '../support/wireguard-client';

/**
 * The gateway side of the local VPC driver, through the API and the workflows (the rest of
 * the network driver stays simulated here; the test makes the VPC's router and plugs a test
 * namespace into its default subnet with the VPC fabric, as an attached app's replica is):
 * a WireGuard gateway on a UDP port of the machine with its interface in the router, a laptop
 * and an office router brought up from the configuration files the API hands out, peer
 * routes sent to the office, rebuild and removal.
 */

const skipReason = wireguardTestSkipReason();
if (skipReason) console.warn(`VPC gateway tests skipped: ${skipReason}`);
const describeReal = skipReason ? describe.skip : describe;

const TAG = `t${process.pid.toString(36)}`;
const NAME = 'api.net.vpc.test';
const OFFICE_HOST = '172.20.0.1';
const ECHO_PORT = 7073;
const ATTACHMENT = randomUUID();

const linkIn = (ns: string | null, ifname: string) => {
  try {
    execFileSync('ip', [...(ns ? ['-n', ns] : []), 'link', 'show', 'dev', ifname], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

describeReal('VPC gateways on the local driver: WireGuard in the router, peer routes, rebuild and removal', () => {
  let stack: TestStack;
  let ws: Workspace;
  let gateways: VpcGateways;
  let laptop: HostLinkedNamespace;
  let office: HostLinkedNamespace;
  const workload = `berth-vgw-wl-${process.pid.toString(36)}`;
  const fabric = new VpcFabric(TAG, async () => new Map(), { info() {}, warn() {}, error() {} } as never);
  let workloadAddress: string;
  const echoes: Array<{ close(): Promise<void> }> = [];
  let vpc: any;
  let gw: any;
  let ns: string;
  let gatewayKey: string;
  let laptopUser: any;
  const clients: Array<{ ns: string; ifname: string }> = [];

  beforeAll(async () => {
    stack = await startStack();
    ws = await seedWorkspace(stack.ds);
    laptop = hostLinkedNamespace('lap', '192.168.233.1', '192.168.233.2');
    office = hostLinkedNamespace('off', '192.168.233.5', '192.168.233.6');
    execFileSync('ip', ['-n', office.ns, 'addr', 'add', `${OFFICE_HOST}/24`, 'dev', 'lo']);
    // the gateway's endpoint names one address of the machine (config.host): the office reaches it too
    execFileSync('ip', ['-n', office.ns, 'route', 'add', `${laptop.hostAddress}/32`, 'via', office.hostAddress]);
    execFileSync('ip', ['netns', 'add', workload]);
    execFileSync('ip', ['-n', workload, 'link', 'set', 'lo', 'up']);
    echoes.push(await tcpEcho(office.ns, ECHO_PORT), await tcpEcho(workload, ECHO_PORT));
    gateways = createVpcGateways({
      dataSource: stack.ds,
      secretBox: stack.secretBox,
      tag: TAG,
      logger: stack.logger,
      host: laptop.hostAddress,
    });
    const sim = stack.activityDeps.provider.network;
    // the gateway side real, the rest of the network driver simulated (this test makes the router)
    (stack.activityDeps.provider as { network: typeof sim }).network = {
      ...sim,
      enableGateway: gateways.enableGateway,
      disableGateway: gateways.disableGateway,
      addPeer: gateways.addPeer,
      removePeer: gateways.removePeer,
      applyRoutes: gateways.applyRoutes,
      createTunnel: gateways.createTunnel,
      deleteTunnel: gateways.deleteTunnel,
    };
    stack.apiDeps.capabilities = {
      ...stack.apiDeps.capabilities!,
      siteConnections: localCapabilities(stack.config).siteConnections,
    };
    await stack.startWorker();
  });

  afterAll(async () => {
    if (vpc) {
      await gateways?.removeAll(vpc.uuid).catch(() => {});
      await removeRouter(TAG, vpc.uuid).catch(() => {});
    }
    for (const e of echoes) await e.close();
    if (namespaceExists(workload)) execFileSync('ip', ['netns', 'del', workload]);
    const pids = clients.map((c) => wireguardGoPid(c.ifname));
    laptop?.remove();
    office?.remove();
    // the clients' TUN devices went with their namespaces: they end, and their sockets with them
    for (const [i, c] of clients.entries()) await stopWireguardGo(pids[i]!, c.ifname, { interfaceDeleted: true });
    await stack?.close();
  });

  const base = () => `/api/v1/vpcs/${vpc.uuid}`;
  const api = () => ({ get: (p: string) => stack.http.get(`${base()}${p}`).set(auth(ws.ownerToken)) });

  async function created(kind: string, body: object, status: string): Promise<any> {
    const res = await stack.http.post(`${base()}/${kind}`).set(auth(ws.ownerToken)).send(body);
    expect(res.status).toBe(201);
    return eventually(
      async () => (await api().get(`/${kind}`)).body.find((x: any) => x.uuid === res.body.uuid && x.status === status),
      { what: `${kind} ${res.body.uuid} ${status}`, timeoutMs: 30_000 },
    );
  }

  /** A device added through the API, its one-read configuration file brought up in `ns` as wg-quick would. */
  async function device(name: string, where: HostLinkedNamespace, ifname: string): Promise<any> {
    const user = await created('vpn_users', { name }, 'active');
    const config = await api().get(`/vpn_users/${user.uuid}/config`);
    expect(config.status).toBe(200);
    const endpoint = parseWireguard(config.text).Peer!.Endpoint!;
    expect(endpoint).toBe(gw.endpoint);
    clients.push({ ns: where.ns, ifname });
    await wireguardClient(where.ns, ifname, config.text, endpoint);
    return user;
  }

  const resolvesThroughTunnel = () => resolveIn(laptop.ns, vpc.resolver_v4, NAME);
  const workloadThroughTunnel = () => tcpRoundTrip(laptop.ns, workloadAddress, ECHO_PORT);
  /** The test workload plugged (again, as a restarted replica is) into the default subnet, its name published. */
  async function plugWorkload(): Promise<void> {
    await fabric.unplug('wl');
    await fabric.plug('wl', workload, [
      {
        attachmentUuid: ATTACHMENT,
        vpcUuid: vpc.uuid,
        vpcCidrV4: vpc.cidr_v4,
        subnetCidrV4: '10.224.1.0/24',
        address: null,
        public: true,
        fqdn: NAME,
      },
    ]);
    workloadAddress = fabric.members(vpc.uuid).get('wl')!;
  }
  const officeReached = () => tcpRoundTrip(ns, OFFICE_HOST, ECHO_PORT);
  /**
   * The office talks to the VPC (a name lookup): a peer with no endpoint configured on the
   * gateway (a roaming device) is reachable once it has sent something, as with any WireGuard
   * peer; a site router keeps it so with its PersistentKeepalive.
   */
  const officeTalks = () => resolveIn(office.ns, vpc.resolver_v4, NAME);

  it('VPN-06 a laptop brought up from the configuration file reaches an attached workload by address and by name through the gateway', async () => {
    vpc = await activeVpc(stack, ws, { name: 'net' });
    ns = await ensureRouter({ tag: TAG, vpcUuid: vpc.uuid, routerV4: '10.224.0.1', resolverV4: vpc.resolver_v4 });
    await ensureResolver({ ns, dir: vpcRunDir(TAG, vpc.uuid), address: vpc.resolver_v4 });
    await plugWorkload();

    gw = await created('vpn_gateways', { kind: 'wireguard' }, 'active');
    const port = Number(gw.endpoint.split(':').pop());
    // the endpoint names what a client reaches: this machine (config.host) and the gateway's own UDP port
    expect(gw.endpoint).toBe(`${laptop.hostAddress}:${port}`);
    expect(port).toBeGreaterThanOrEqual(GATEWAY_PORTS.first);
    const [row] = await stack.ds.query(`SELECT listen_port, private_key_sealed FROM vpc_vpn_gateways WHERE uuid = $1`, [
      gw.uuid,
    ]);
    expect(row.listen_port).toBe(port);
    gatewayKey = stack.secretBox.open(row.private_key_sealed);

    // the interface is in the router, holding the terminator; its wireguard-go (and so its socket) on the machine
    const ifname = wireguardInterfaceName(gw.uuid);
    expect(linkIn(ns, ifname)).toBe(true);
    expect(linkIn(null, ifname)).toBe(false);
    const addr = execFileSync('ip', ['-n', ns, '-4', '-o', 'addr', 'show', 'dev', ifname]).toString();
    expect(addr).toContain('10.224.0.3/32');
    const pid = wireguardGoPid(ifname)!;
    expect(readlinkSync(`/proc/${pid}/ns/net`)).toBe(readlinkSync('/proc/self/ns/net'));
    expect(execFileSync('ss', ['-ulnp']).toString()).toMatch(new RegExp(`:${port}\\s.*wireguard-go`));

    const user = await device('laptop', laptop, 'bwgtlaptop0');
    expect(
      await eventually(resolvesThroughTunnel, { what: 'the name resolved through the tunnel', timeoutMs: 20_000 }),
    ).toEqual([workloadAddress]);
    expect(await workloadThroughTunnel()).toBe(true);
    laptopUser = user;
  });

  it('the tunnel leads into the VPC only, and only from the device’s own address (the attacker’s side: a laptop that widens its own configuration)', async () => {
    const inNs = (...argv: string[]) => execFileSync('ip', ['netns', 'exec', laptop.ns, ...argv]);
    // everything routed into the tunnel: the machine's other networks (the office's link, which the
    // machine routes) are not behind the VPC's router, which has no link to anything
    inNs('wg', 'set', 'bwgtlaptop0', 'peer', gw.public_key, 'allowed-ips', '0.0.0.0/0');
    inNs('ip', 'route', 'add', `${office.address}/32`, 'dev', 'bwgtlaptop0');
    expect(await tcpRoundTrip(laptop.ns, office.address, ECHO_PORT)).toBe(false);
    // another device's pool address as the source: the gateway accepts from a device its own address only
    inNs('ip', 'addr', 'add', '10.224.0.200/32', 'dev', 'bwgtlaptop0');
    expect(await tcpRoundTrip(laptop.ns, workloadAddress, ECHO_PORT, 1500, '10.224.0.200')).toBe(false);
    expect(await workloadThroughTunnel()).toBe(true); // the device itself still gets through
  });

  it('deleting the user cuts the tunnel at once', async () => {
    const user = laptopUser;
    const ifname = wireguardInterfaceName(gw.uuid);
    const del = await stack.http.delete(`${base()}/vpn_users/${user.uuid}`).set(auth(ws.ownerToken));
    expect(del.status).toBe(202);
    await eventually(async () => !(await api().get('/vpn_users')).body.some((u: any) => u.uuid === user.uuid), {
      what: 'the user deleted',
    });
    expect(await resolvesThroughTunnel()).toBeNull();
    expect(await workloadThroughTunnel()).toBe(false);
    expect(execFileSync('ip', ['netns', 'exec', ns, 'wg', 'show', ifname, 'peers']).toString().trim()).toBe('');
  });

  it('PEER-04 a peer route goes to the device its description names: traffic from the VPC to the range reaches the office; a route with no gateway fails with the reason', async () => {
    await device('office', office, 'bwgtoffice0');
    expect(await eventually(officeTalks, { what: 'the office talking to the VPC', timeoutMs: 20_000 })).toEqual([
      workloadAddress,
    ]);
    expect(await officeReached()).toBe(false); // no route to its range yet
    const routes = [];
    for (const body of [
      { cidr: '172.20.0.0/24', gateway_kind: 'wireguard', description: 'office' },
      { cidr: '172.21.0.0/24', gateway_kind: 'mesh', description: 'office' },
      { cidr: '172.22.0.0/24', gateway_kind: 'wireguard', description: 'nobody' },
    ]) {
      const res = await stack.http.post(`${base()}/peer_routes`).set(auth(ws.ownerToken)).send(body);
      expect(res.status).toBe(201);
      routes.push(res.body);
    }
    const apply = await stack.http.post(`${base()}/peer_routes/apply`).set(auth(ws.ownerToken)).send({});
    expect(apply.status).toBeLessThan(300);
    const done = await eventually(
      async () => {
        const list = (await api().get('/peer_routes')).body as any[];
        return list.every((r) => r.status !== 'pending') ? list : null;
      },
      { what: 'the apply recorded', timeoutMs: 30_000 },
    );
    const byCidr = Object.fromEntries(done.map((r: any) => [r.cidr, r]));
    expect(byCidr['172.20.0.0/24']).toMatchObject({ status: 'applied' });
    expect(byCidr['172.21.0.0/24']).toMatchObject({
      status: 'failed',
      failure_reason: expect.stringMatching(/no mesh gateway/),
    });
    expect(byCidr['172.22.0.0/24']).toMatchObject({
      status: 'failed',
      failure_reason: expect.stringMatching(/no VPN user is named "nobody"/),
    });
    // in the kernel: exactly the applied range, marked for the workloads' plugs to read
    const installed = execFileSync('ip', ['-n', ns, 'route', 'show', 'proto', String(PEER_ROUTE_PROTOCOL)]).toString();
    expect(installed.trim().split('\n')).toEqual([`172.20.0.0/24 dev ${wireguardInterfaceName(gw.uuid)} scope link`]);
    expect(await eventually(officeReached, { what: 'the office reached through the tunnel', timeoutMs: 20_000 })).toBe(
      true,
    );
    // an attached workload, restarted by the apply (plugged again), sends the range through the gateway too
    const fromWorkload = () => tcpRoundTrip(workload, OFFICE_HOST, ECHO_PORT);
    expect(await fromWorkload()).toBe(false); // plugged before the apply: no route to the range
    await plugWorkload();
    expect(await fromWorkload()).toBe(true);

    // applying without the route withdraws it (and the office's allowed range)
    const results = await gateways.applyRoutes(vpc.uuid, []);
    expect(results).toEqual([]);
    expect(await officeReached()).toBe(false);
    const again = await gateways.applyRoutes(vpc.uuid, [
      { routeUuid: routes[0].uuid, cidr: '172.20.0.0/24', gatewayKind: 'wireguard' },
    ]);
    expect(again).toEqual([{ routeUuid: routes[0].uuid, applied: true }]);
    expect(await eventually(officeReached, { what: 'the office reached again', timeoutMs: 20_000 })).toBe(true);

    // a range the router routes itself (the VPN pool; the API refuses it, the driver does not rely on that):
    // the kernel refuses to add it, and the pool keeps its route
    const pool = () => execFileSync('ip', ['-n', ns, 'route', 'show', vpc.vpn_pool_v4]).toString().trim();
    const poolRoute = pool();
    const clash = await gateways.applyRoutes(vpc.uuid, [
      { routeUuid: routes[0].uuid, cidr: vpc.vpn_pool_v4, gatewayKind: 'wireguard' },
    ]);
    expect(clash).toEqual([
      {
        routeUuid: routes[0].uuid,
        applied: false,
        reason: 'the kernel refused the route: RTNETLINK answers: File exists',
      },
    ]);
    expect(pool()).toBe(poolRoute);
    await gateways.applyRoutes(vpc.uuid, [
      { routeUuid: routes[0].uuid, cidr: '172.20.0.0/24', gatewayKind: 'wireguard' },
    ]);
  });

  it('access kinds fail with the reason their provider is unreachable; site connections get 422 naming why; keys never leak', async () => {
    const zt = await created(
      'vpn_gateways',
      { kind: 'zero_trust', organization: 'acme', client_id: 'client-1', client_secret: 'zt-secret-value-123' },
      'failed',
    );
    expect(zt.failure_reason).toMatch(/zero_trust connector cannot reach its provider/);
    // a route of that kind has no terminator to go to, and says why (the applied one stays)
    const [officeRoute] = await stack.ds.query(`SELECT uuid FROM vpc_peer_routes WHERE cidr = '172.20.0.0/24'`);
    const ztRoute = { routeUuid: randomUUID(), cidr: '172.23.0.0/24', gatewayKind: 'zero_trust' };
    expect(
      await gateways.applyRoutes(vpc.uuid, [
        ztRoute,
        { routeUuid: officeRoute.uuid, cidr: '172.20.0.0/24', gatewayKind: 'wireguard' },
      ]),
    ).toEqual([
      {
        routeUuid: ztRoute.routeUuid,
        applied: false,
        reason: expect.stringMatching(/^no zero_trust terminator in this VPC: the zero_trust connector cannot reach/),
      },
      { routeUuid: officeRoute.uuid, applied: true },
    ]);
    const before = await stack.ds.query(`SELECT count(*)::int AS n FROM vpc_site_connections`);
    const site = await stack.http
      .post(`${base()}/site_connections`)
      .set(auth(ws.ownerToken))
      .send({
        name: 'hq',
        gateway_uuid: gw.uuid,
        remote_address: '198.51.100.7',
        remote_cidrs: ['172.30.0.0/24'],
        tunnels: [{ pre_shared_key: 'sitekey0123456789' }],
      });
    expect(site.status).toBe(422);
    expect(site.body.detail).toMatch(/no IPsec site-to-site connections/);
    expect(await stack.ds.query(`SELECT count(*)::int AS n FROM vpc_site_connections`)).toEqual(before);
    expectNoSecretLeaks(stack, [gatewayKey, 'zt-secret-value-123']);
  });

  it('a gateway whose interface is gone: a route toward it fails with the kernel’s reason; rebuild brings gateway, peers and routes back', async () => {
    const ifname = wireguardInterfaceName(gw.uuid);
    await gateways.removeAll(vpc.uuid);
    expect(linkIn(ns, ifname)).toBe(false);
    expect(wireguardGoPid(ifname)).toBeNull();
    expect(await officeReached()).toBe(false);
    const [route] = await stack.ds.query(`SELECT uuid FROM vpc_peer_routes WHERE cidr = '172.20.0.0/24'`);
    const refused = await gateways.applyRoutes(vpc.uuid, [
      { routeUuid: route.uuid, cidr: '172.20.0.0/24', gatewayKind: 'wireguard' },
    ]);
    expect(refused).toEqual([
      { routeUuid: route.uuid, applied: false, reason: expect.stringMatching(/kernel refused.*Cannot find device/) },
    ]);

    // another program on the gateway's port: the gateway does not move (devices' files name the port), it says why
    const squatter = createSocket('udp4');
    await new Promise<void>((resolve) => squatter.bind(Number(gw.endpoint.split(':').pop()), resolve));
    await expect(gateways.rebuild(vpc.uuid)).rejects.toThrow(
      /^UDP port \d+, the WireGuard gateway's .* is taken by another program/,
    );
    await new Promise<void>((resolve) => squatter.close(() => resolve()));

    await gateways.rebuild(vpc.uuid);
    await gateways.rebuild(vpc.uuid); // again: nothing changes
    expect(linkIn(ns, ifname)).toBe(true);
    const [row] = await stack.ds.query(`SELECT endpoint FROM vpc_vpn_gateways WHERE uuid = $1`, [gw.uuid]);
    expect(row.endpoint).toBe(gw.endpoint); // the same port: configuration files handed out still work
    // the office's client still has its old session: it handshakes again once its packets go unanswered
    expect(
      await eventually(async () => ((await officeTalks()) && (await officeReached())) || null, {
        what: 'the office reached after the rebuild',
        timeoutMs: 60_000,
        intervalMs: 1000,
      }),
    ).toBe(true);
  });

  it('removeAll and removeRouter leave no process, interface, socket or namespace', async () => {
    const ifname = wireguardInterfaceName(gw.uuid);
    const pid = wireguardGoPid(ifname)!;
    expect(pid).not.toBeNull();
    await gateways.removeAll(vpc.uuid);
    await gateways.removeAll(vpc.uuid); // idempotent
    // before the router goes: the gateway's process and socket live on the machine, outside it
    expect(wireguardGoPid(ifname)).toBeNull();
    await eventually(async () => (!existsSync(`/proc/${pid}`) ? true : null), { what: 'wireguard-go reaped' });
    expect(existsSync(controlSocket(ifname))).toBe(false);
    expect(execFileSync('ss', ['-ulnp']).toString()).not.toMatch(new RegExp(`:${gw.endpoint.split(':').pop()}\\s`));
    expect([linkIn(ns, ifname), linkIn(null, ifname)]).toEqual([false, false]);
    await removeRouter(TAG, vpc.uuid);
    expect(namespaceExists(routerNamespace(TAG, vpc.uuid))).toBe(false);
    // a retried disable after the record is gone finds nothing, and says nothing
    await gateways.disableGateway(gw.uuid);
  });
});

describeReal(
  'VPC gateways in the local VPC driver: a Berth restart rebuilds them, deleting the VPC leaves nothing',
  () => {
    const tag = `u${process.pid.toString(36)}`;
    let stack: TestStack;
    let ws: Workspace;
    let laptop: HostLinkedNamespace;
    let opened: Awaited<ReturnType<typeof openLocalVpcs>> | undefined;
    let vpc: any;
    const PROBE = 'probe.net.vpc.test';
    const PROBE_ADDRESS = '10.224.1.99';

    const open = () =>
      openLocalVpcs({
        dataSource: stack.ds,
        tag,
        logger: stack.logger,
        gateways: createVpcGateways({
          dataSource: stack.ds,
          secretBox: stack.secretBox,
          tag,
          logger: stack.logger,
          host: laptop.hostAddress,
        }),
        restartApp: async () => false,
      });

    beforeAll(async () => {
      stack = await startStack();
      ws = await seedWorkspace(stack.ds);
      laptop = hostLinkedNamespace('lap2', '192.168.233.9', '192.168.233.10');
      opened = await open();
      (stack.activityDeps.provider as { network: NetworkDriver }).network = opened.driver;
      await stack.startWorker();
    });

    afterAll(async () => {
      await opened?.close().catch(() => {});
      const pid = wireguardGoPid('bwgtlaptop1');
      laptop?.remove();
      await stopWireguardGo(pid, 'bwgtlaptop1', { interfaceDeleted: true });
      await stack?.close();
    });

    const http = () => ({
      get: (p: string) => stack.http.get(`/api/v1/vpcs/${vpc.uuid}${p}`).set(auth(ws.ownerToken)),
      post: (p: string, body: object) =>
        stack.http.post(`/api/v1/vpcs/${vpc.uuid}${p}`).set(auth(ws.ownerToken)).send(body),
      del: (p: string) => stack.http.delete(`/api/v1/vpcs/${vpc.uuid}${p}`).set(auth(ws.ownerToken)),
    });
    const resolves = () => resolveIn(laptop.ns, vpc.resolver_v4, PROBE);
    const resolvesAgain = () => eventually(resolves, { what: 'the probe name through the tunnel', timeoutMs: 60_000 });

    it('a laptop reaches the resolver of a VPC the driver built; Berth stopping takes the gateway down, starting again brings it back on the same endpoint', async () => {
      vpc = await activeVpc(stack, ws, { name: 'rebuilt' });
      publishName(vpcRunDir(tag, vpc.uuid), 'probe', PROBE, PROBE_ADDRESS);
      const created = await http().post('/vpn_gateways', { kind: 'wireguard' });
      expect(created.status).toBe(201);
      const gw = await eventually(
        async () => (await http().get('/vpn_gateways')).body.find((g: any) => g.status === 'active'),
        { what: 'the gateway active' },
      );
      const user = await http().post('/vpn_users', { name: 'laptop' });
      await eventually(
        async () =>
          (await http().get('/vpn_users')).body.find((u: any) => u.uuid === user.body.uuid && u.status === 'active'),
        { what: 'the user active' },
      );
      const config = await http().get(`/vpn_users/${user.body.uuid}/config`);
      await wireguardClient(laptop.ns, 'bwgtlaptop1', config.text, parseWireguard(config.text).Peer!.Endpoint!);
      expect(await resolvesAgain()).toEqual([PROBE_ADDRESS]);

      const ifname = wireguardInterfaceName(gw.uuid);
      await opened!.close(); // Berth stops
      opened = undefined;
      expect(wireguardGoPid(ifname)).toBeNull();
      expect(namespaceExists(routerNamespace(tag, vpc.uuid))).toBe(false);
      expect(await resolves()).toBeNull();

      opened = await open(); // Berth starts: the router, its resolver and its gateway again, from the database
      publishName(vpcRunDir(tag, vpc.uuid), 'probe', PROBE, PROBE_ADDRESS); // (an attached app's replica does this when it starts)
      expect(wireguardGoPid(ifname)).not.toBeNull();
      // the laptop keeps its configuration: same endpoint, same keys; it handshakes again once unanswered
      expect(await resolvesAgain()).toEqual([PROBE_ADDRESS]);
    });

    it('deleting the VPC with its subnet and gateway leaves no namespace, interface, process, socket or file', async () => {
      const ifname = wireguardInterfaceName((await http().get('/vpn_gateways')).body[0].uuid);
      const pid = wireguardGoPid(ifname)!;
      const [subnet] = (await http().get('/subnets')).body;
      expect((await http().del(`/subnets/${subnet.uuid}`)).status).toBeLessThan(300);
      await eventually(async () => ((await http().get('/subnets')).body.length === 0 ? true : null), {
        what: 'the subnet deleted',
      });
      expect((await http().del('')).status).toBeLessThan(300);
      await eventually(async () => ((await http().get('')).status === 404 ? true : null), {
        what: 'the VPC deleted',
        timeoutMs: 30_000,
      });
      expect(namespaceExists(routerNamespace(tag, vpc.uuid))).toBe(false);
      expect(existsSync(vpcRunDir(tag, vpc.uuid))).toBe(false);
      expect(wireguardGoPid(ifname)).toBeNull();
      expect(existsSync(controlSocket(ifname))).toBe(false);
      expect(linkIn(null, ifname)).toBe(false);
      await eventually(async () => (!existsSync(`/proc/${pid}`) ? true : null), { what: 'wireguard-go reaped' });
      expect(await resolves()).toBeNull();
    });
  },
);
