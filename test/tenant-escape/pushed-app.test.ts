import { existsSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import request from 'supertest';
import { eventually } from '../support/stack';
import { healthyAddon } from '../e2e/support/addons';
import { startBerthDev, type BerthDev } from '../e2e/support/berth-dev';
import { ask as askProbe, deployProbe as deployTenantProbe } from '../e2e/support/tenant-probe';
import type { WorkingCopy } from '../support/working-copy';

/**
 * Issue 25's tenant-escape suite, end to end: `npm start`'s platform, a tenant's app pushed
 * with git (test/fixtures/apps/tenant-probe), asked from the outside to try each path out of
 * its sandbox from the inside. Each path is refused; what the rules allow works. The kernel
 * rules themselves are also proved one by one in network-policy.test.ts.
 */
jest.setTimeout(400_000);

const EXTRA_PORT = 7070;
// the workload network needs root and nftables, the view bubblewrap (`.ci/run` installs them)
const root = process.getuid?.() === 0 && existsSync('/usr/sbin/nft') && existsSync('/usr/bin/bwrap');
const describeIf = root ? describe : describe.skip;

let berth: BerthDev;
let api: ReturnType<typeof request>;
let auth: Record<string, string>;
let resource: string;
let gateway: string;
let machineService: Server;
let machinePort: number;
const copies: WorkingCopy[] = [];

const host = () => ({ berth, api, auth, resource, copies });
const deployProbe = (name: string, body: Record<string, unknown> = {}) => deployTenantProbe(host(), name, body);
const ask = (app: { public_url: string }, pathname: string) => askProbe(host(), app, pathname);

beforeAll(async () => {
  if (!root) return;
  berth = await startBerthDev();
  api = request(berth.apiUrl);
  auth = { Authorization: `Bearer ${berth.token}` };
  resource = (await api.get('/api/v1/resources').set(auth).expect(200)).body[0].uuid;
  const line = /Network\s+each workload in a network namespace of its own, (\S+) its gateway/.exec(berth.output());
  if (!line) throw new Error(`the banner names no workload network:\n${berth.output().slice(-3000)}`);
  gateway = line[1]!;
  // a service of the machine listening on every interface (as the machine's own databases may)
  machineService = createServer((s) => s.on('error', () => {}).end('machine'));
  await new Promise<void>((r) => machineService.listen(0, '0.0.0.0', () => r()));
  machinePort = (machineService.address() as { port: number }).port;
});

afterAll(async () => {
  machineService?.close();
  await berth?.stop();
  for (const copy of copies) copy.dispose();
});

describeIf('tenant escape: a pushed app tries its way out', () => {
  let probe: any;
  let closed: any;
  let open: any;

  beforeAll(async () => {
    // the same code three times, each listening on the same extra port; one runs two replicas
    probe = await deployProbe('probe', { quota: { replicas: 2 } });
    closed = await deployProbe('closed-app', { allow_connections: false });
    open = await deployProbe('open-app', { allow_connections: true });
  });

  it('two apps, a clone and two replicas of the same code, all on the same fixed extra port, all serve', async () => {
    const copy = (
      await api.post(`/api/v1/apps/${closed.uuid}/clone`).set(auth).send({ name: 'closed-copy' }).expect(201)
    ).body;
    for (const app of [probe, closed, open, copy])
      expect(await ask(app, `/connect?host=127.0.0.1&port=${EXTRA_PORT}`)).toBe('open');
    const boots = new Set<string>();
    await eventually(
      async () => {
        boots.add(await ask(probe, '/boot'));
        return boots.size === 2 ? true : undefined;
      },
      { what: 'both replicas answering', timeoutMs: 30_000 },
    );
  });

  it("never the platform: Temporal and its UI, the API, the control database, the ingress and the machine's services are out of reach", async () => {
    const platformPorts = [
      'PORT',
      'BERTH_TEMPORAL_PORT',
      'BERTH_TEMPORAL_UI_PORT',
      'BERTH_PG_PORT',
      'BERTH_INGRESS_PORT',
    ].map((k) => Number(berth.env[k]));
    for (const port of [...platformPorts, 5432, 3306, 6379, machinePort]) {
      for (const host of ['127.0.0.1', gateway]) {
        expect({ host, port, got: await ask(probe, `/connect?host=${host}&port=${port}`) }).toMatchObject({
          got: expect.stringMatching(/^(refused|timeout)$/),
        });
      }
    }
    // the machine's service does listen there: the host itself reaches it at the gateway
    await new Promise<void>((resolve, reject) => {
      const s = connect(machinePort, gateway, () => {
        s.destroy();
        resolve();
      });
      s.once('error', reject);
    });
  });

  it('the object store at the endpoint buckets show, from inside too: it refuses an anonymous request (AccessDenied)', async () => {
    const endpoint = `http://127.0.0.1:${berth.env.BERTH_S3_PORT}/`;
    const got = await ask(probe, `/fetch?url=${encodeURIComponent(endpoint)}`);
    expect(got).toMatch(/^403 .*AccessDenied/s);
  });

  it("another app's port only when it allows connections, found by its service name through the workspace's resolver", async () => {
    const closedAt = await ask(closed, '/address');
    const openAt = await ask(open, '/address');
    expect(await ask(probe, `/connect?host=${closedAt}&port=${EXTRA_PORT}`)).toBe('timeout');
    expect(await ask(probe, `/connect?host=${openAt}&port=${EXTRA_PORT}`)).toBe('open');
    expect(await ask(probe, `/resolve?name=${open.service_name}`)).toBe(openAt);
    const [host, port] = (open.internal_url as string).split(':');
    expect(await ask(probe, `/connect?host=${host}&port=${port}`)).toBe('open');
  });

  it('its attached add-on by the hostname in connection_details, and no one else', async () => {
    const addon = await healthyAddon(api, auth, probe.uuid, { type: 'postgres', label: 'main' });
    const { hostname, port } = addon.connection_details.internal;
    await api.patch(`/api/v1/apps/${probe.uuid}/state`).set(auth).send({ action: 'restart' }).expect(202);
    await eventually(
      async () => ((await ask(probe, `/connect?host=${hostname}&port=${port}`)) === 'open' ? true : undefined),
      {
        what: 'the attached add-on reachable',
        timeoutMs: 60_000,
      },
    );
    expect(await ask(closed, `/connect?host=${hostname}&port=${port}`)).toBe('timeout');
  });

  it("its own processes and /tmp only; not Berth's data", async () => {
    expect(Number(await ask(probe, '/processes'))).toBeLessThan(10);
    // (the probe runs two replicas: each has a /tmp of its own, so the write's own answer lists it)
    expect((await ask(probe, '/tmp?write=mine')).split(',')).toContain('mine');
    expect((await ask(closed, '/tmp')).split(',')).not.toContain('mine');
    expect(await ask(probe, `/ls?path=${encodeURIComponent(berth.dataDir)}`)).toBe('ENOENT');
  });
});
