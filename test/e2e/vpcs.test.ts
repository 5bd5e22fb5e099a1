import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import request from 'supertest';
import { instanceTag } from '../../activities/provider/local/network/fabric';
import { routerNamespace, vpcRunDir } from '../../activities/provider/local/vpc/names';
import { eventually } from '../support/stack';
import { workingCopy, type WorkingCopy } from '../support/working-copy';
import { startBerthDev, type BerthDev } from './support/berth-dev';
import { ask as askProbe, deployProbe as deployTenantProbe } from './support/tenant-probe';

/**
 * Issue 26: VPCs for real on the local driver, end to end on `npm start`'s platform. Tenant
 * probes (test/fixtures/apps/tenant-probe) pushed with git are attached to VPCs through the
 * API and asked, from the inside, what they reach: attached apps reach each other by VPC
 * address and by fqdn through the VPC's resolver, on any port; an app not attached, or
 * attached to another VPC, does not; deleting a VPC leaves nothing of it in the kernel.
 */
jest.setTimeout(600_000);

const EXTRA_PORT = 7070;
const WEB_PORT = 8080;
const root =
  process.getuid?.() === 0 &&
  existsSync('/usr/sbin/nft') &&
  existsSync('/usr/bin/bwrap') &&
  existsSync('/usr/sbin/dnsmasq');
const describeIf = root ? describe : describe.skip;

let berth: BerthDev;
let api: ReturnType<typeof request>;
let auth: Record<string, string>;
let resource: string;
let region: number;
let tag: string;
const copies: WorkingCopy[] = [];

const host = () => ({ berth, api, auth, resource, copies });
const deployProbe = (name: string) => deployTenantProbe(host(), name);
const ask = (app: { public_url: string }, pathname: string) => askProbe(host(), app, pathname);

/** The app's address on a VPC range (its /address lists every IPv4 address it has). */
const vpcAddressOf = async (app: { public_url: string }, prefix: string) =>
  (await ask(app, '/address')).split(',').find((a) => a.startsWith(prefix)) ?? null;

async function activeVpc(body: Record<string, unknown>): Promise<any> {
  const created = (
    await api
      .post('/api/v1/vpcs')
      .set(auth)
      .send({ region_id: region, ...body })
      .expect(201)
  ).body;
  return eventually(
    async () => {
      const got = (await api.get(`/api/v1/vpcs/${created.uuid}`).set(auth).expect(200)).body;
      if (got.status === 'failed') throw new Error(`VPC failed: ${JSON.stringify(got)}`);
      return got.status === 'active' ? got : undefined;
    },
    { what: `VPC ${created.name} active`, timeoutMs: 60_000 },
  );
}

async function subnets(vpc: { uuid: string }): Promise<any[]> {
  return (await api.get(`/api/v1/vpcs/${vpc.uuid}/subnets`).set(auth).expect(200)).body;
}

/** Attaches the app to the subnet; resolves with the attachment once it is attached. */
async function attach(vpc: { uuid: string }, subnetUuid: string, app: { uuid: string }): Promise<any> {
  const created = (
    await api
      .post(`/api/v1/vpcs/${vpc.uuid}/attachments`)
      .set(auth)
      .send({ subnet_uuid: subnetUuid, attachable_type: 'App', attachable_uuid: app.uuid })
      .expect(201)
  ).body;
  return eventually(
    async () => {
      const list = (await api.get(`/api/v1/vpcs/${vpc.uuid}/attachments`).set(auth).expect(200)).body as any[];
      const got = list.find((x) => x.uuid === created.uuid);
      if (got?.status === 'failed') throw new Error(`attachment failed: ${JSON.stringify(got)}`);
      return got?.status === 'attached' ? got : undefined;
    },
    { what: 'attachment attached', timeoutMs: 90_000 },
  );
}

async function detach(vpc: { uuid: string }, attachment: { uuid: string }): Promise<void> {
  await api.delete(`/api/v1/vpcs/${vpc.uuid}/attachments/${attachment.uuid}`).set(auth).expect(202);
  await eventually(
    async () => {
      const list = (await api.get(`/api/v1/vpcs/${vpc.uuid}/attachments`).set(auth).expect(200)).body as any[];
      return list.some((x) => x.uuid === attachment.uuid) ? undefined : true;
    },
    { what: 'attachment gone', timeoutMs: 90_000 },
  );
}

const netnsExists = (name: string) => existsSync(`/run/netns/${name}`);
const pidsIn = (ns: string) =>
  netnsExists(ns) ? execFileSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).split(/\s+/).filter(Boolean) : [];
/** The probe's routing table (its /proc/net/route is its own namespace's), as "destination hex -> interface". */
const defaultRouteInterface = async (app: { public_url: string }) =>
  (await ask(app, '/read?path=/proc/net/route'))
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .find((f) => f[1] === '00000000')?.[0];

beforeAll(async () => {
  if (!root) return;
  berth = await startBerthDev();
  api = request(berth.apiUrl);
  auth = { Authorization: `Bearer ${berth.token}` };
  const res = (await api.get('/api/v1/resources').set(auth).expect(200)).body[0];
  resource = res.uuid;
  region = res.region.id;
  tag = instanceTag(berth.dataDir);
});

afterAll(async () => {
  await berth?.stop();
  for (const copy of copies) copy.dispose();
});

describeIf('VPCs on the local driver: real private networks', () => {
  let vpc: any;
  let a: any;
  let b: any;
  let outsider: any;
  let attachA: any;
  let attachB: any;
  let joined: any;

  beforeAll(async () => {
    vpc = await activeVpc({ name: 'net' });
    a = await deployProbe('vpc-a');
    b = await deployProbe('vpc-b');
    outsider = await deployProbe('vpc-outsider');
  });

  it('VPC-07 VPC-08 the VPC is a router namespace of its own with its resolver (dnsmasq) at the range base plus two', async () => {
    expect(vpc).toMatchObject({ cidr_v4: '10.224.0.0/16', resolver_v4: '10.224.0.2', vpn_pool_v4: '10.224.0.128/25' });
    expect(vpc.cidr_v6).toMatch(/^fd[0-9a-f:]+\/48$/);
    const ns = routerNamespace(tag, vpc.uuid);
    expect(netnsExists(ns)).toBe(true);
    expect(execFileSync('ip', ['-n', ns, '-4', '-o', 'addr', 'show', 'dev', 'lo'], { encoding: 'utf8' })).toContain(
      '10.224.0.2/32',
    );
    const pids = pidsIn(ns);
    expect(pids.map((p) => execFileSync('cat', [`/proc/${p}/comm`], { encoding: 'utf8' }).trim())).toContain('dnsmasq');
  });

  it('ATT-03 ATT-04 two attached apps reach each other on any port by VPC address and by fqdn through the resolver; each attach restarted its app', async () => {
    const [bootA, bootB] = [await ask(a, '/boot'), await ask(b, '/boot')];
    const subnet = (await subnets(vpc)).find((s) => s.name === 'default');
    attachA = await attach(vpc, subnet.uuid, a);
    attachB = await attach(vpc, subnet.uuid, b);
    expect(await ask(a, '/boot')).not.toBe(bootA);
    expect(await ask(b, '/boot')).not.toBe(bootB);
    expect(attachB.address_v4).toMatch(/^10\.224\.1\.\d+$/);
    expect(await vpcAddressOf(a, '10.224.1.')).toBe(attachA.address_v4);
    expect(await vpcAddressOf(b, '10.224.1.')).toBe(attachB.address_v4);
    for (const port of [EXTRA_PORT, WEB_PORT])
      expect(await ask(a, `/connect?host=${attachB.address_v4}&port=${port}`)).toBe('open');
    expect(await ask(b, `/connect?host=${attachA.address_v4}&port=${EXTRA_PORT}`)).toBe('open');
    expect(attachB.fqdn).toBe(`${b.name}.net.vpc.${new URL(b.public_url).hostname.split('.').slice(1).join('.')}`);
    expect(await ask(a, `/resolve?name=${attachB.fqdn}&server=${vpc.resolver_v4}`)).toBe(attachB.address_v4);
    // the platform's resolver answers the fqdn too, for apps plugged into the VPC
    expect(await ask(a, `/resolve?name=${attachB.fqdn}`)).toBe(attachB.address_v4);
    expect(await ask(a, `/connect?host=${attachB.fqdn}&port=${EXTRA_PORT}`)).toBe('open');
  });

  it('APP-11 an app that joins the VPC at creation is on its subnet from its first start, reachable by its fqdn (no attach, no restart)', async () => {
    const subnet = (await subnets(vpc)).find((s) => s.name === 'default');
    const app = (
      await api
        .post('/api/v1/apps')
        .set(auth)
        .send({
          name: 'vpc-joined',
          resource_id: resource,
          deployment_method: 'git_push',
          vpc_subnet_uuid: subnet.uuid,
        })
        .expect(201)
    ).body;
    joined = app;
    const copy = workingCopy('tenant-probe');
    copies.push(copy);
    expect(berth.push(copy.dir, app.git_url)).toMatch(/deployed: /);
    const attachment = (
      (await api.get(`/api/v1/vpcs/${vpc.uuid}/attachments`).set(auth).expect(200)).body as any[]
    ).find((x) => x.attachable_uuid === app.uuid);
    expect(attachment).toMatchObject({ status: 'attached' });
    expect(await vpcAddressOf(app, '10.224.1.')).toBe(attachment.address_v4);
    expect(await ask(a, `/resolve?name=${attachment.fqdn}&server=${vpc.resolver_v4}`)).toBe(attachment.address_v4);
    expect(await ask(a, `/connect?host=${attachment.address_v4}&port=${EXTRA_PORT}`)).toBe('open');
  });

  it('an app not attached reaches neither the attached apps nor the resolver, and learns no VPC name', async () => {
    expect(await ask(outsider, `/connect?host=${attachB.address_v4}&port=${EXTRA_PORT}`)).not.toBe('open');
    expect(await ask(outsider, `/resolve?name=${attachB.fqdn}`)).toMatch(/^E[A-Z]+$/);
    expect(await ask(outsider, `/resolve?name=${attachB.fqdn}&server=${vpc.resolver_v4}`)).toMatch(/^E[A-Z]+$/);
  });

  it('ATT-04 the fqdn follows its app across a restart', async () => {
    const before = await ask(b, '/boot');
    await api.patch(`/api/v1/apps/${b.uuid}/state`).set(auth).send({ action: 'restart' }).expect(202);
    await eventually(async () => ((await ask(b, '/boot')) !== before ? true : undefined), {
      what: 'b restarted',
      timeoutMs: 60_000,
    });
    const now = await vpcAddressOf(b, '10.224.1.');
    expect(now).not.toBeNull();
    expect(await ask(a, `/resolve?name=${attachB.fqdn}&server=${vpc.resolver_v4}`)).toBe(now);
    expect(await ask(a, `/connect?host=${now}&port=${EXTRA_PORT}`)).toBe('open');
  });

  it("SUB-04 two VPCs never see each other; a private subnet moves the default route into its VPC, a public one keeps the platform's", async () => {
    const other = await activeVpc({ name: 'other', cidr_v4: '10.230.0.0/16' });
    const priv = (
      await api
        .post(`/api/v1/vpcs/${other.uuid}/subnets`)
        .set(auth)
        .send({ name: 'private', cidr_v4: '10.230.2.0/24', public: false })
        .expect(201)
    ).body;
    const attached = await attach(other, priv.uuid, outsider);
    expect(attached.address_v4).toMatch(/^10\.230\.2\.\d+$/);
    expect(await defaultRouteInterface(outsider)).toMatch(/^vpc/);
    expect(await defaultRouteInterface(a)).toBe('eth0');
    // still served through the ingress (above) and still on the platform's resolver
    expect(await ask(outsider, `/resolve?name=${attachB.fqdn}&server=${other.resolver_v4}`)).toMatch(/^E[A-Z]+$/);
    expect(await ask(outsider, `/connect?host=${attachA.address_v4}&port=${EXTRA_PORT}`)).not.toBe('open');
    expect(await ask(a, `/connect?host=${attached.address_v4}&port=${EXTRA_PORT}`)).not.toBe('open');
    await detach(other, attached);
    await api.delete(`/api/v1/vpcs/${other.uuid}/subnets/${priv.uuid}`).set(auth).expect(204);
    for (const s of await subnets(other))
      await api.delete(`/api/v1/vpcs/${other.uuid}/subnets/${s.uuid}`).set(auth).expect(204);
    await api.delete(`/api/v1/vpcs/${other.uuid}`).set(auth).expect(202);
  });

  it('ATT-03 detaching takes the interface away and restarts the app: its VPC address and name are gone', async () => {
    const address = await vpcAddressOf(b, '10.224.1.');
    await detach(vpc, attachB);
    expect(await vpcAddressOf(b, '10.224.1.')).toBeNull();
    expect(await ask(a, `/connect?host=${address}&port=${EXTRA_PORT}`)).not.toBe('open');
    expect(await ask(a, `/resolve?name=${attachB.fqdn}&server=${vpc.resolver_v4}`)).toMatch(/^E[A-Z]+$/);
  });

  it('VPC-13 deleting the VPC with its subnets leaves no namespace, interface, route, file or process behind', async () => {
    const ns = routerNamespace(tag, vpc.uuid);
    const processes = pidsIn(ns);
    expect(processes.length).toBeGreaterThan(0);
    await detach(vpc, attachA);
    // an app deleted leaves its VPC with it (unplugged, its attachment removed)
    await api.delete(`/api/v1/apps/${joined.uuid}`).set(auth).expect(202);
    await eventually(
      async () =>
        ((await api.get(`/api/v1/vpcs/${vpc.uuid}/attachments`).set(auth).expect(200)).body as any[]).length === 0
          ? true
          : undefined,
      { what: 'every attachment gone', timeoutMs: 90_000 },
    );
    for (const s of await subnets(vpc))
      await api.delete(`/api/v1/vpcs/${vpc.uuid}/subnets/${s.uuid}`).set(auth).expect(204);
    await api.delete(`/api/v1/vpcs/${vpc.uuid}`).set(auth).expect(202);
    await eventually(
      async () => ((await api.get(`/api/v1/vpcs/${vpc.uuid}`).set(auth)).status === 404 ? true : undefined),
      { what: 'VPC deleted', timeoutMs: 60_000 },
    );
    expect(netnsExists(ns)).toBe(false);
    expect(existsSync(vpcRunDir(tag, vpc.uuid))).toBe(false);
    for (const pid of processes) expect(existsSync(`/proc/${pid}`)).toBe(false);
    expect(readdirSync('/run/netns').filter((n) => n.startsWith(`bvpc-${tag}-`))).toEqual([]);
    expect(await defaultRouteInterface(a)).toBe('eth0');
    expect(await vpcAddressOf(a, '10.224.')).toBeNull();
  });
});
