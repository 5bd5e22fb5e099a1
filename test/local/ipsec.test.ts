import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findBinary } from '../../activities/provider/local/data/commands';
import { createIpsec, type Ipsec } from '../../activities/provider/local/vpn/ipsec';
import { tunnelConf, type SiteTunnelSpec } from '../../activities/provider/local/vpn/ipsec-conf';
import { linkedNamespaces, tcpEcho, tcpRoundTrip, type LinkedNamespaces } from '../support/netns';
import { eventually } from '../support/stack';

function skipReason(): string | null {
  if (process.getuid?.() !== 0) return 'not root: network namespaces and TUN devices need root';
  const charon = findBinary(['charon'], undefined, '/usr/lib/ipsec:/usr/libexec/ipsec');
  if (!findBinary(['swanctl'], undefined) || !charon)
    return 'strongSwan not installed (apt-get install strongswan-charon strongswan-swanctl libcharon-extra-plugins)';
  if (!existsSync(path.join(path.dirname(charon), 'plugins/libstrongswan-kernel-libipsec.so')))
    return 'the kernel-libipsec plugin is not installed (apt-get install libcharon-extra-plugins)';
  return null;
}

const skip = skipReason();
if (skip) console.warn(`IPsec tests skipped: ${skip}`);
const describeReal = skip ? describe.skip : describe;

const ECHO_PORT = 7072;
const VPC_HOST = '10.224.1.1';
const SITE_HOST = '172.20.0.1';
const PSK = 'psk0123456789abcdefSITEONE';
/** A well-formed tunnel spec (the refusal tests change one field of it). */
const SITE: SiteTunnelSpec = {
  namespace: 'berth-x',
  name: 'site1',
  localAddress: '192.168.228.1',
  remoteAddress: '192.168.228.2',
  localCidrs: ['10.224.0.0/16'],
  remoteCidrs: ['172.20.0.0/24'],
  preSharedKey: PSK,
  initiate: true,
};

describe('IPsec site tunnels: configuration and refusals', () => {
  it('writes any pre-shared key base64-encoded: no character of it can end the value', () => {
    const key = 'k"ey\n}\nsecrets { x = y }\\';
    const text = tunnelConf({
      namespace: 'berth-x',
      name: 'site1',
      localAddress: '192.168.228.1',
      remoteAddress: '192.168.228.2',
      localCidrs: ['10.224.0.0/16'],
      remoteCidrs: ['172.20.0.0/24', '172.21.0.0/24'],
      preSharedKey: key,
      initiate: false,
    });
    const secret = /secret = 0s([A-Za-z0-9+/=]+)\n/.exec(text)![1]!;
    expect(Buffer.from(secret, 'base64').toString('utf8')).toBe(key);
    expect(text).not.toContain('k"ey');
    expect(text).toContain('remote_ts = 172.20.0.0/24, 172.21.0.0/24');
    expect(text).toContain('start_action = none');
  });

  it('refuses a malformed spec before running anything', async () => {
    const ran: string[][] = [];
    const ipsec = createIpsec({ trace: (argv) => ran.push(argv) });
    for (const [bad, message] of [
      [{ name: 'site 1' }, /tunnel name/],
      [{ remoteAddress: 'example.com' }, /remoteAddress/],
      [{ remoteCidrs: [] }, /remoteCidrs is empty/],
      [{ localCidrs: ['10.224.0.0'] }, /localCidrs/],
      [{ preSharedKey: 'short' }, /shorter than 8/],
    ] as Array<[Partial<SiteTunnelSpec>, RegExp]>) {
      const err = await ipsec.ensureTunnel({ ...SITE, ...bad }).catch((e: Error) => e);
      expect(String(err)).toMatch(message);
      expect(String(err)).not.toContain(PSK);
    }
    expect(ran).toEqual([]);
  });

  it('without strongSwan, ensureTunnel fails for good and names the packages to install', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'berth-ipsec-empty-'));
    try {
      const ipsec = createIpsec({ root: empty, searchPath: empty });
      await expect(ipsec.ensureTunnel({ ...SITE, namespace: 'berth-none' })).rejects.toMatchObject({
        type: 'IpsecUnavailable',
        nonRetryable: true,
        message: expect.stringContaining('swanctl (Debian package strongswan-swanctl)'),
      });
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describeReal('IPsec site tunnels: strongSwan (userspace ESP) between a VPC namespace and a remote site', () => {
  let net: LinkedNamespaces;
  let root: string;
  let ipsec: Ipsec;
  const echoes: Array<{ close(): Promise<void> }> = [];
  const ran: string[][] = [];
  let vpcEnd: SiteTunnelSpec;
  let siteEnd: SiteTunnelSpec;

  beforeAll(async () => {
    net = linkedNamespaces('ipsec', '192.168.228.1', '192.168.228.2');
    execFileSync('ip', ['-n', net.a, 'addr', 'add', `${VPC_HOST}/24`, 'dev', 'lo']);
    execFileSync('ip', ['-n', net.b, 'addr', 'add', `${SITE_HOST}/24`, 'dev', 'lo']);
    root = mkdtempSync(path.join(tmpdir(), 'berth-ipsec-'));
    ipsec = createIpsec({ root, trace: (argv) => ran.push(argv) });
    echoes.push(await tcpEcho(net.a, ECHO_PORT), await tcpEcho(net.b, ECHO_PORT));
    vpcEnd = {
      namespace: net.a,
      name: 'site1',
      localAddress: net.addressA,
      remoteAddress: net.addressB,
      localCidrs: ['10.224.0.0/16'],
      remoteCidrs: ['172.20.0.0/24'],
      preSharedKey: PSK,
      initiate: true,
    };
    siteEnd = {
      namespace: net.b,
      name: 'vpc1',
      localAddress: net.addressB,
      remoteAddress: net.addressA,
      localCidrs: ['172.20.0.0/24'],
      remoteCidrs: ['10.224.0.0/16'],
      preSharedKey: PSK,
      initiate: false,
    };
  });

  afterAll(async () => {
    for (const end of [vpcEnd, siteEnd]) if (end) await ipsec?.teardown(end).catch(() => {});
    for (const e of echoes) await e.close();
    net?.remove();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const vpcToSite = () => tcpRoundTrip(net.a, SITE_HOST, ECHO_PORT);
  const siteToVpc = () => tcpRoundTrip(net.b, VPC_HOST, ECHO_PORT);
  const bothWays = async () => (await vpcToSite()) && (await siteToVpc());

  it('a tunnel with a wrong pre-shared key carries nothing', async () => {
    expect(await vpcToSite()).toBe(false); // no path at all without the tunnel
    await ipsec.ensureTunnel({ ...siteEnd, preSharedKey: 'another-key-entirely' });
    const state = await ipsec.ensureTunnel(vpcEnd);
    expect(state.established).toBe(false);
    expect(await vpcToSite()).toBe(false);
  });

  it('with the same key on both ends, traffic goes both ways through the tunnel', async () => {
    await ipsec.ensureTunnel(siteEnd); // the right key replaces the wrong one
    await ipsec.ensureTunnel(vpcEnd); // initiates again
    expect(await eventually(async () => (await bothWays()) || null, { what: 'traffic both ways', timeoutMs: 30_000 }));
    expect((await ipsec.status(vpcEnd))!.established).toBe(true);
    expect((await ipsec.status(siteEnd))!.established).toBe(true);
  });

  it('a restarted worker adopts the running charon: same process, the tunnel still up', async () => {
    const before = (await ipsec.status(vpcEnd))!;
    const restarted = createIpsec({ root, trace: (argv) => ran.push(argv) });
    const after = await restarted.ensureTunnel(vpcEnd);
    expect(after).toEqual({ ...before, established: true });
    expect(await bothWays()).toBe(true);
  });

  it('the key lives only in its 0600 file: never in an argv or charon’s log', () => {
    const dir = path.join(root, net.a);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const file = path.join(dir, 'tunnels', 'site1.conf');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const b64 = Buffer.from(PSK).toString('base64');
    expect(readFileSync(file, 'utf8')).toContain(`secret = 0s${b64}`);
    for (const text of [JSON.stringify(ran), readFileSync(path.join(dir, 'charon.log'), 'utf8')]) {
      expect(text).not.toContain(PSK);
      expect(text).not.toContain(b64);
    }
  });

  it('teardown ends the tunnel and leaves no charon, TUN device, route or file', async () => {
    const pids = [(await ipsec.status(vpcEnd))!.charonPid, (await ipsec.status(siteEnd))!.charonPid];
    await ipsec.teardown(vpcEnd);
    expect(await vpcToSite()).toBe(false);
    await ipsec.teardown(siteEnd);
    await ipsec.teardown(siteEnd); // again: nothing there is fine
    await eventually(async () => (pids.every((pid) => !existsSync(`/proc/${pid}`)) ? true : null), {
      what: 'both charons ended and reaped',
    });
    for (const ns of [net.a, net.b]) {
      expect(existsSync(path.join(root, ns))).toBe(false);
      expect(execFileSync('ip', ['-n', ns, 'link', 'show']).toString()).not.toContain('ipsec0');
      expect(execFileSync('ip', ['-n', ns, 'route', 'show', 'table', 'all']).toString()).not.toMatch(/table 220/);
    }
    expect(await siteToVpc()).toBe(false);
  });
});
