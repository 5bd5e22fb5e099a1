import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { fabricUnavailable, WorkloadNetwork, type NetworkMember } from '../../activities/provider/local/network/fabric';
import { hostInterface } from '../../activities/provider/local/network/namespace';
import { DEFAULT_WORKLOAD_RANGE } from '../../platform/workload-addresses';

/**
 * The workload network's policy from the tenant's side, on the real kernel: processes in
 * the namespaces the fabric makes try every path issue 25 item 4 names and are refused,
 * and succeed where the rules allow. Each case fails when its rule is removed from
 * network/policy.ts (or its namespace from fabric.ts).
 */
jest.setTimeout(60_000);

const PROBE = `
const net = require('node:net');
const [host, port] = process.argv.slice(1);
const s = net.connect({ host, port: Number(port) });
const done = (what) => { console.log(what); process.exit(0); };
s.setTimeout(1500, () => done('timeout'));
s.once('connect', () => done('open'));
s.once('error', (e) => done(e.code === 'ECONNREFUSED' ? 'refused' : e.code));
`;
const RESOLVE = `
const r = new (require('node:dns').promises.Resolver)({ timeout: 1500, tries: 1 });
r.setServers([process.argv[1]]);
r.resolve4(process.argv[2]).then((a) => console.log(a.sort().join(',')), (e) => console.log(e.code));
`;
const READ = `
const s = require('node:net').connect({ host: process.argv[1], port: Number(process.argv[2]) });
let got = '';
s.on('data', (b) => (got += b));
s.on('end', () => { console.log(got); process.exit(0); });
s.on('error', (e) => console.log(e.code));
setTimeout(() => { console.log('timeout'); process.exit(0); }, 1500);
`;
const WHO_ASKS = `
require('node:net').createServer((c) => c.on('error', () => {}).end(c.remoteAddress.replace(/^::ffff:/, ''))).listen(Number(process.argv[1]), () => console.log('listening'));
`;
const LISTEN = `
const port = Number(process.argv[1]);
require('node:net').createServer((c) => c.on('error', () => {}).end('hi')).listen(port, () => console.log('listening'));
`;

const member = (workspace: string | null, app: string | null, extra: Partial<NetworkMember> = {}): NetworkMember => ({
  workspace,
  app,
  allowConnections: false,
  clusters: [],
  serviceName: null,
  ...extra,
});

// what the fabric needs (root, nftables, iproute2); `.ci/run` installs them
const unavailable = process.getuid?.() !== 0 ? 'not root' : existsSync('/usr/sbin/nft') ? null : 'no nftables';
const describeIf = unavailable ? describe.skip : describe;

let net: WorkloadNetwork;
let dataDir: string;
const children: ChildProcess[] = [];
let hostService: Server;
let hostPort: number;
let serverStandIn: Server;
const SERVER_PORT = 25_999;
const PLATFORM_PORT = 24_999;
let platformService: Server;

function inside(netnsPath: string, script: string, args: string[]): ChildProcess {
  const child = spawn('/usr/bin/nsenter', [`--net=${netnsPath}`, '--', process.execPath, '-e', script, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return child;
}

/** What a tenant's process sees when it connects from `from` to host:port. */
async function connectFrom(from: string, host: string, port: number): Promise<string> {
  const child = inside(from, PROBE, [host, String(port)]);
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  await new Promise((r) => child.once('close', r));
  return out.trim();
}

async function listenIn(netnsPath: string, port: number): Promise<void> {
  const child = inside(netnsPath, LISTEN, [String(port)]);
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
}

/**
 * This network's namespaces, and how many of their host interfaces exist (other test files
 * make workload networks of their own on the machine at the same time: only this one's count).
 */
const counts = () => {
  const mine = readdirSync('/run/netns').filter((n) => n.startsWith(`berth-${net.tag}-`));
  return {
    namespaces: mine.length,
    interfaces: mine.filter((n) => existsSync(`/sys/class/net/${hostInterface(n)}`)).length,
  };
};

describeIf('tenant escape: the workload network (kernel policy)', () => {
  const ws1 = 'ws-one';
  const ws2 = 'ws-two';
  let a1: string, a2: string, b: string, c: string, d: string;
  let a1Path: string, a2Path: string, cPath: string, dPath: string;

  beforeAll(async () => {
    const reason = await fabricUnavailable();
    if (reason) throw new Error(`the workload network cannot be built here: ${reason}`);
    dataDir = mkdtempSync(path.join(tmpdir(), 'berth-net-'));
    // a platform service on the machine's loopback that workloads may use (the object store's S3 side)
    platformService = createServer((s) => s.on('error', () => {}).end('store'));
    await new Promise<void>((r) => platformService.listen(PLATFORM_PORT, '127.0.0.1', () => r()));
    net = await WorkloadNetwork.open({
      dataDir,
      range: DEFAULT_WORKLOAD_RANGE,
      logger: pino({ level: 'silent' }),
      platformServices: [{ host: '127.0.0.1', port: PLATFORM_PORT }],
    });
    const A1 = await net.attach('a-1', member(ws1, 'app-a', { clusters: ['db-1'] }));
    const A2 = await net.attach('a-2', member(ws1, 'app-a', { clusters: ['db-1'] }));
    const B = await net.attach('b-1', member(ws1, 'app-b', { allowConnections: true, serviceName: 'web' }));
    const C = await net.attach('c-1', member(ws1, 'app-c'));
    const D = await net.attach('d-1', member(ws2, 'app-d', { allowConnections: true, serviceName: 'web' }));
    [a1, a2, b, c, d] = [A1, A2, B, C, D].map((x) => x.address);
    [a1Path, a2Path, cPath, dPath] = [A1, A2, C, D].map((x) => x.netnsPath);
    // every app listens on the same fixed port: each has a port space of its own
    for (const w of [A1, A2, B, C, D]) await listenIn(w.netnsPath, 9999);
    // a machine service listening on every interface, and an add-on server at the gateway
    hostService = createServer((s) => s.on('error', () => {}).end('host'));
    await new Promise<void>((r) => hostService.listen(0, '0.0.0.0', () => r()));
    hostPort = (hostService.address() as { port: number }).port;
    serverStandIn = createServer((s) => s.on('error', () => {}).end('db'));
    await new Promise<void>((r) => serverStandIn.listen(SERVER_PORT, net.gateway, () => r()));
    await net.publishServer('db-1', SERVER_PORT);
  });

  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    hostService?.close();
    serverStandIn?.close();
    platformService?.close();
    await net?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('two workloads listening on the same port both serve (a port space each); the host reaches both', async () => {
    expect(await connectFrom(a1Path, a2, 9999)).toBe('open');
    expect(await connectFrom(a2Path, a1, 9999)).toBe('open');
  });

  it('an app reaches another app of its workspace only when that app allows connections', async () => {
    expect(await connectFrom(a1Path, b, 9999)).toBe('open');
    expect(await connectFrom(a1Path, c, 9999)).toBe('timeout');
  });

  it('an app never reaches an app of another workspace, even one that allows connections', async () => {
    expect(await connectFrom(a1Path, d, 9999)).toBe('timeout');
  });

  it('an app reaches the add-on server attached to it at the gateway; an app it is not attached to does not', async () => {
    expect(await connectFrom(a1Path, net.gateway, SERVER_PORT)).toBe('open');
    expect(await connectFrom(cPath, net.gateway, SERVER_PORT)).toBe('timeout');
  });

  it("never the platform: the host's services are closed at the gateway, and loopback is the workload's own", async () => {
    expect(await connectFrom(a1Path, net.gateway, hostPort)).toBe('timeout');
    expect(await connectFrom(a1Path, '127.0.0.1', hostPort)).toBe('refused');
  });

  it("the resolver at the gateway answers an app's service name with its addresses, within the asker's workspace only", async () => {
    const resolve = async (from: string, name: string) => {
      const child = inside(from, RESOLVE, [net.gateway, name]);
      let out = '';
      child.stdout!.on('data', (buf: Buffer) => (out += buf.toString()));
      await new Promise((r) => child.once('close', r));
      return out.trim();
    };
    expect(await resolve(a1Path, 'web')).toBe(b);
    expect(await resolve(dPath, 'web')).toBe(d);
    expect(await resolve(a1Path, 'nothing-here')).toBe('ENOTFOUND');
  });

  it("the platform service workloads may use answers at its own loopback address inside, and nothing else of the machine's loopback does", async () => {
    const read = async (from: string, port: number) => {
      const child = inside(from, READ, ['127.0.0.1', String(port)]);
      let out = '';
      child.stdout!.on('data', (buf: Buffer) => (out += buf.toString()));
      await new Promise((r) => child.once('close', r));
      return out.trim();
    };
    expect(await read(cPath, PLATFORM_PORT)).toBe('store');
    expect(await connectFrom(cPath, '127.0.0.1', hostPort)).toBe('refused');
    expect(await connectFrom(cPath, net.gateway, hostPort)).toBe('timeout');
  });

  /** A host outside the machine: a namespace of this test's own behind a veth of the host, at `<prefix>.2/30`. */
  async function outsideHost(name: string, prefix: string, port: number, run: () => Promise<void>): Promise<void> {
    const ns = `berth-test-${name}-${process.pid}`;
    const hostIf = `t${name.slice(0, 2)}${process.pid}`.slice(0, 15);
    const sh = (args: string[]) => execFileSync('ip', args, { stdio: 'ignore' });
    sh(['netns', 'add', ns]);
    try {
      sh(['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
      sh(['addr', 'add', `${prefix}.1/30`, 'dev', hostIf]);
      sh(['link', 'set', hostIf, 'up']);
      sh(['-n', ns, 'addr', 'add', `${prefix}.2/30`, 'dev', 'eth0']);
      sh(['-n', ns, 'link', 'set', 'eth0', 'up']);
      sh(['-n', ns, 'route', 'add', 'default', 'via', `${prefix}.1`]);
      const server = inside(`/run/netns/${ns}`, WHO_ASKS, [String(port)]);
      await new Promise<void>((resolve) => server.stdout!.once('data', () => resolve()));
      await run();
    } finally {
      execFileSync('ip', ['link', 'del', hostIf], { stdio: 'ignore' });
      execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
    }
  }

  const readFrom = async (netnsPath: string, host: string, port: number) => {
    const child = inside(netnsPath, READ, [host, String(port)]);
    let seen = '';
    child.stdout!.on('data', (buf: Buffer) => (seen += buf.toString()));
    await new Promise((r) => child.once('close', r));
    return seen.trim();
  };

  it("goes out to the world through NAT: a host outside sees the machine's address, not the workload's", async () => {
    // "the world": 198.18.0.0/15 is for tests
    await outsideHost('world', '198.18.77', 8000, async () => {
      expect(await readFrom(a1Path, '198.18.77.2', 8000)).toBe('198.18.77.1');
    });
  });

  it("never reaches a private range through the host: a host on the machine's LAN is out of a workload's reach", async () => {
    await outsideHost('lan', '192.168.77', 8001, async () => {
      // the machine itself reaches the LAN host: what refuses the workload is the rule
      expect(await readFrom(`/proc/${process.pid}/ns/net`, '192.168.77.2', 8001)).toBe('192.168.77.1');
      expect(await readFrom(a1Path, '192.168.77.2', 8001)).toBe('timeout');
    });
  });

  it('a workload that leaves takes its namespace and interface with it; close leaves nothing', async () => {
    const before = counts();
    const eIf = `/sys/class/net/${hostInterface(`berth-${net.tag}-e-1`)}`;
    const e = await net.attach('e-1', member(ws1, 'app-e'));
    expect(counts()).toEqual({ namespaces: before.namespaces + 1, interfaces: before.interfaces + 1 });
    expect(existsSync(eIf)).toBe(true);
    await net.detach('e-1');
    expect(counts()).toEqual(before);
    expect(existsSync(eIf)).toBe(false);
    expect(e.address).toMatch(/^10\./);
  });
});

describeIf('the workload network after a crash of Berth', () => {
  it('a restarted instance takes its block back and sweeps what nothing uses; close leaves no namespace, interface, route or table', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'berth-net-'));
    const logger = pino({ level: 'silent' });
    const first = await WorkloadNetwork.open({ dataDir: dir, range: DEFAULT_WORKLOAD_RANGE, logger });
    await first.attach('x-1', member('ws', 'app-x'));
    await first.attach('x-2', member('ws', 'app-x'));
    // SIGKILL: nothing closed but the sockets (the kernel closes them with the process). The
    // next start finds its block and its namespaces.
    await (first as unknown as { resolver: { close(): Promise<void> } }).resolver.close();
    const second = await WorkloadNetwork.open({ dataDir: dir, range: DEFAULT_WORKLOAD_RANGE, logger });
    expect(second.gateway).toBe(first.gateway);
    expect(await second.sweep()).toBe(2);
    const leftovers = readdirSync('/run/netns').filter((n) => n.startsWith(`berth-${second.tag}-`));
    expect(leftovers).toEqual([]);
    await second.close();
    const { execFileSync } = await import('node:child_process');
    expect(execFileSync('ip', ['-4', 'addr', 'show', 'dev', 'lo'], { encoding: 'utf8' })).not.toContain(second.gateway);
    expect(execFileSync('ip', ['route', 'show', 'type', 'blackhole'], { encoding: 'utf8' })).not.toContain(
      second.gateway.replace(/\.1$/, '.0'),
    );
    expect(execFileSync('nft', ['list', 'tables'], { encoding: 'utf8' })).not.toContain(second.table);
    rmSync(dir, { recursive: true, force: true });
  });
});
