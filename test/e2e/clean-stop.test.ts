import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { instanceTag } from '../../activities/provider/local/network/fabric';
import { routerNamespace } from '../../activities/provider/local/vpc/names';
import { gitRepository } from '../support/apps';
import { workingCopy } from '../support/working-copy';
import { ROOT, TEST_ENV } from '../support/env';
import { eventually } from '../support/stack';
import { RECEIVER_ALLOW, startReceiver } from '../support/webhooks';

/**
 * Issue 16, item 3: `npm start` (the whole stack: API, worker, ingress, PostgreSQL, Temporal,
 * object store) with webhook deliveries in flight to a receiver that went away, then a
 * SIGTERM to the npm process alone (what a process manager sends), and in another run a
 * SIGINT to the whole process group (Ctrl-C): every process of the tree, found by walking
 * /proc from npm before the signal, is gone and every port is free within 10 s. And when
 * berth itself is SIGKILLed, its children do not outlive it by more than that.
 */
const STOP_WITHIN_MS = 10_000;
/** Resolves a name at one DNS server (argv: server, name): its addresses, or the error code. */
const RESOLVE = `
const r = new (require('node:dns').promises.Resolver)({ timeout: 1500, tries: 2 });
r.setServers([process.argv[1]]);
r.resolve4(process.argv[2]).then((a) => console.log(a.sort().join(',')), (e) => console.log(e.code));
`;
const TOKEN = `brt_clean_stop_${randomBytes(12).toString('hex')}`;
const dataDir = mkdtempSync(path.join(tmpdir(), 'berth-clean-stop-'));
chmodSync(dataDir, 0o755); // as root, PostgreSQL runs as its own user and must reach its data dir

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** pid -> [ppid, state] of every process, from /proc/<pid>/stat. */
function processTable(): Map<number, { ppid: number; state: string }> {
  const table = new Map<number, { ppid: number; state: string }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(entry), { ppid: Number(ppid), state: state! });
    } catch {
      /* exited meanwhile */
    }
  }
  return table;
}

/** `root` and every process below it (by ppid). */
function tree(root: number): number[] {
  const table = processTable();
  const found = [root];
  for (let i = 0; i < found.length; i++) {
    for (const [pid, { ppid }] of table) if (ppid === found[i]) found.push(pid);
  }
  return found;
}

/** Running, not a zombie waiting for its parent to reap it. */
function running(pid: number): boolean {
  const p = processTable().get(pid);
  return p !== undefined && p.state !== 'Z';
}

interface Berth {
  npm: ChildProcess;
  api: string;
  ports: number[];
  output(): string;
}

const ports = { api: 0, pg: 0, temporal: 0, ui: 0, s3: 0, ingress: 0, ingressTls: 0 };
const repo = gitRepository(['first']);
let started: ChildProcess | undefined;

async function npmStart(): Promise<Berth> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    BERTH_DATA_DIR: dataDir,
    BERTH_BOOTSTRAP_TOKEN: TOKEN,
    PORT: String(ports.api),
    BERTH_PG_PORT: String(ports.pg),
    BERTH_TEMPORAL_PORT: String(ports.temporal),
    BERTH_TEMPORAL_UI_PORT: String(ports.ui),
    BERTH_S3_PORT: String(ports.s3),
    BERTH_INGRESS_PORT: String(ports.ingress),
    BERTH_INGRESS_TLS_PORT: String(ports.ingressTls),
    BERTH_SIM_INGRESS_PORT: String(ports.ingress),
    BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW,
    BERTH_GIT_ALLOW_FILE_URLS: '1',
    BERTH_PROVIDER_LATENCY_MS: '100',
    LOG_LEVEL: 'warn',
  };
  for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'BERTH_S3_ENDPOINT', 'BERTH_PROVIDER', 'BERTH_HOST'])
    delete env[name];
  if (process.env[TEST_ENV.cli]) env.TEMPORAL_CLI = process.env[TEST_ENV.cli];
  const npm = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  started = npm;
  let out = '';
  npm.stdout!.on('data', (c: Buffer) => {
    out += c.toString('utf8');
  });
  npm.stderr!.on('data', (c: Buffer) => {
    out += c.toString('utf8');
  });
  await eventually(
    async () => {
      if (npm.exitCode !== null) throw new Error(`npm start ended (${npm.exitCode}):\n${out}`);
      return out.includes('Ctrl-C stops everything');
    },
    { what: `the npm start banner; output so far:\n${out}`, timeoutMs: 150_000, intervalMs: 250 },
  );
  return { npm, api: `http://127.0.0.1:${ports.api}`, ports: Object.values(ports), output: () => out };
}

/**
 * Webhook deliveries: a ping arrives, then the receiver goes away and an app's deployment
 * events keep failing against it (retrying, in flight) when the stop comes.
 */
async function deliveriesInFlight(api: string): Promise<void> {
  const auth = { Authorization: `Bearer ${TOKEN}` };
  const receiver = await startReceiver();
  try {
    const webhook = (
      await request(api)
        .post('/api/v1/webhooks')
        .set(auth)
        .send({ url: receiver.url, description: 'clean stop' })
        .expect(201)
    ).body;
    const ping = (await request(api).post(`/api/v1/webhooks/${webhook.uuid}/test`).set(auth).expect(200)).body;
    expect(ping.status).toBe('delivered');
    // The run before on this data dir left an app whose deployment may end now and reach this
    // webhook too (it takes every event): the ping is the one hit of its type.
    expect(receiver.hits.filter((h) => JSON.parse(h.body).type === 'ping')).toHaveLength(1);
    await receiver.close();

    const resource = (await request(api).get('/api/v1/resources').set(auth).expect(200)).body[0];
    const app = (
      await request(api)
        .post('/api/v1/apps')
        .set(auth)
        .send({
          name: `stop-${randomBytes(3).toString('hex')}`,
          resource_id: resource.uuid,
          deployment_method: 'public_git',
          deployment_config: { repository: repo.url },
        })
        .expect(201)
    ).body;
    // a public_git app deploys its branch head once created: its deploy events go to the webhook
    expect(app.uuid).toBeDefined();
    await eventually(
      async () => {
        const listed = (await request(api).get(`/api/v1/webhooks/${webhook.uuid}/deliveries`).set(auth).expect(200))
          .body as Array<{ status: string; attempts: number }>;
        return listed.some((d) => d.status === 'pending' && d.attempts > 0);
      },
      { what: 'a delivery retrying against the receiver that went away', timeoutMs: 60_000, intervalMs: 250 },
    );
  } finally {
    await receiver.close().catch(() => {});
  }
}

async function expectAllGone(pids: number[], berth: Berth, signalledAt: number): Promise<void> {
  const deadline = signalledAt + STOP_WITHIN_MS;
  for (;;) {
    const alive = pids.filter(running);
    const held = [];
    for (const port of berth.ports) if (!(await portFree(port))) held.push(port);
    if (alive.length === 0 && held.length === 0) break;
    if (Date.now() > deadline) {
      const table = processTable();
      const left = alive.map(
        (pid) =>
          `${pid} (${table.get(pid)?.state}) ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').slice(0, 100)}`,
      );
      throw new Error(
        `after ${STOP_WITHIN_MS} ms still running: ${left.join('; ') || 'none'}; ports held: ${held.join(', ') || 'none'}\n${berth.output().slice(-2000)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(Date.now() - signalledAt).toBeLessThan(STOP_WITHIN_MS);
}

beforeAll(async () => {
  for (const name of Object.keys(ports) as Array<keyof typeof ports>) ports[name] = await freePort();
});
afterEach(async () => {
  // A failed run leaves nothing behind for the next one: its processes killed and gone.
  const left = started?.pid ? tree(started.pid).reverse() : [];
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  started = undefined;
  await eventually(async () => left.every((pid) => !running(pid)), {
    what: 'the processes of a failed run to end',
    timeoutMs: 10_000,
    intervalMs: 100,
  });
});
afterAll(() => {
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(repo.dir, { recursive: true, force: true });
});

describe('clean stop of npm start', () => {
  jest.setTimeout(300_000);

  it('SIGTERM to the npm process alone stops every process of the tree and frees every port within 10 s', async () => {
    const berth = await npmStart();
    await deliveriesInFlight(berth.api);
    const pids = tree(berth.npm.pid!);
    // npm, its shell, berth, PostgreSQL (with its backends), Temporal, tsx's esbuild, the watchdog.
    expect(pids.length).toBeGreaterThanOrEqual(6);
    const signalledAt = Date.now();
    process.kill(berth.npm.pid!, 'SIGTERM');
    await expectAllGone(pids, berth, signalledAt);
    expect(berth.output()).toContain('berth: stopped');
  });

  it('SIGINT to the process group (Ctrl-C) stops every process of the tree and frees every port within 10 s', async () => {
    const berth = await npmStart();
    await deliveriesInFlight(berth.api);
    const pids = tree(berth.npm.pid!);
    expect(pids.length).toBeGreaterThanOrEqual(6);
    const signalledAt = Date.now();
    process.kill(-berth.npm.pid!, 'SIGINT');
    await expectAllGone(pids, berth, signalledAt);
    expect(berth.output()).toContain('berth: stopped');
  });

  it('when berth itself is killed (SIGKILL), its watchdog stops PostgreSQL and Temporal: nothing outlives it by 10 s', async () => {
    const berth = await npmStart();
    const pids = tree(berth.npm.pid!);
    const berthPid = pids.find((pid) =>
      readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('node\0bin/berth.js\0dev'),
    );
    expect(berthPid).toBeDefined();
    const signalledAt = Date.now();
    process.kill(berthPid!, 'SIGKILL');
    await expectAllGone(pids, berth, signalledAt);
  });

  const networked = process.getuid?.() === 0 && existsSync('/usr/sbin/nft');
  (networked ? it : it.skip)(
    'killed (SIGKILL) with an app, its add-on and its VPC running, the next start serves them again (the VPC router taken back, the app on its subnet) and leaves no namespace behind; its stop removes every namespace, interface, rule and address',
    async () => {
      const tag = instanceTag(dataDir);
      const namespaces = () => readdirSync('/run/netns').filter((n) => n.startsWith(`berth-${tag}-`));
      const app = workingCopy('e2e-web');
      let berth = await npmStart();
      const auth = { Authorization: `Bearer ${TOKEN}` };
      const resource = (await request(berth.api).get('/api/v1/resources').set(auth).expect(200)).body[0];
      const created = (
        await request(berth.api)
          .post('/api/v1/apps')
          .set(auth)
          .send({
            name: `restart-${randomBytes(3).toString('hex')}`,
            resource_id: resource.uuid,
            deployment_method: 'public_git',
            deployment_config: { repository: `file://${app.dir}` },
          })
          .expect(201)
      ).body;
      const boot = (what: string) =>
        eventually(
          async () => {
            const url = new URL(created.public_url);
            const res = await request(`https://127.0.0.1:${ports.ingressTls}`)
              .get('/boot')
              .set('Host', url.host)
              .ca(readFileSync(path.join(dataDir, 'tls', 'local-ca.crt')))
              .catch(() => null);
            return res?.status === 200 ? res.text.trim() : undefined;
          },
          { what, timeoutMs: 150_000, intervalMs: 500 },
        );
      const vpcUuid = (
        await request(berth.api).post('/api/v1/vpcs').set(auth).send({ region_id: resource.region.id }).expect(201)
      ).body.uuid;
      const first = await boot('the app serving');
      await request(berth.api)
        .post(`/api/v1/apps/${created.uuid}/addons`)
        .set(auth)
        .send({ type: 'postgres', label: 'db' })
        .expect(201);
      // and a VPC the app is attached to: a router with its resolver, the app plugged into its subnet
      const vpc = await eventually(
        async () => {
          const got = await request(berth.api).get(`/api/v1/vpcs/${vpcUuid}`).set(auth);
          return got.body.status === 'active' ? got.body : undefined;
        },
        { what: 'the VPC active', timeoutMs: 60_000 },
      );
      const subnet = (await request(berth.api).get(`/api/v1/vpcs/${vpc.uuid}/subnets`).set(auth).expect(200)).body[0];
      const attached = (
        await request(berth.api)
          .post(`/api/v1/vpcs/${vpc.uuid}/attachments`)
          .set(auth)
          .send({ subnet_uuid: subnet.uuid, attachable_type: 'App', attachable_uuid: created.uuid })
          .expect(201)
      ).body;
      const attachment = await eventually(
        async () => {
          const list = (await request(berth.api).get(`/api/v1/vpcs/${vpc.uuid}/attachments`).set(auth)).body as any[];
          const got = list.find((x) => x.uuid === attached.uuid);
          return got?.status === 'attached' ? got : undefined;
        },
        { what: 'the app attached to the VPC', timeoutMs: 90_000 },
      );
      const router = routerNamespace(tag, vpc.uuid);
      const onTheVpc = () =>
        namespaces().some((ns) =>
          execFileSync('ip', ['-n', ns, '-4', '-o', 'addr', 'show'], { encoding: 'utf8' }).includes(
            ` ${attachment.address_v4}/24 `,
          ),
        );
      const resolved = () =>
        execFileSync(
          'ip',
          ['netns', 'exec', router, process.execPath, '-e', RESOLVE, vpc.resolver_v4, attachment.fqdn],
          {
            encoding: 'utf8',
          },
        ).trim();
      await eventually(async () => (onTheVpc() ? true : undefined), { what: 'the app on its VPC subnet' });
      expect(resolved()).toBe(attachment.address_v4);
      const serving = namespaces();
      expect(serving.length).toBeGreaterThanOrEqual(1);

      const berthPid = tree(berth.npm.pid!).find((pid) =>
        readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('node\0bin/berth.js\0dev'),
      );
      process.kill(berthPid!, 'SIGKILL');
      await eventually(
        async () => berth.npm.exitCode !== null || berth.npm.signalCode !== null || !running(berth.npm.pid!),
        {
          what: 'npm start to end after berth was killed',
          timeoutMs: 30_000,
        },
      ).catch(() => process.kill(-berth.npm.pid!, 'SIGKILL'));

      berth = await npmStart();
      const second = await boot('the app serving again');
      expect(second).not.toBe(first);
      // the VPC's router was taken back: its resolver answers, the app is on its subnet again
      await eventually(async () => (onTheVpc() ? true : undefined), { what: 'the app back on its VPC subnet' });
      expect(resolved()).toBe(attachment.address_v4);
      // the killed run's namespaces were swept once its replicas were gone: one per replica now
      await eventually(async () => namespaces().length === serving.length, {
        what: `as many namespaces as before the kill (${serving.length}); now ${namespaces().join(', ')}`,
        timeoutMs: 30_000,
      });

      const pids = tree(berth.npm.pid!);
      process.kill(berth.npm.pid!, 'SIGTERM');
      await expectAllGone(pids, berth, Date.now());
      expect(namespaces()).toEqual([]);
      expect(readdirSync('/run/netns').filter((n) => n.startsWith(`bvpc-${tag}-`))).toEqual([]);
      expect(execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' })).not.toContain(`berth-${tag}-`);
      expect(execFileSync('nft', ['list', 'tables'], { encoding: 'utf8' })).not.toContain(`berth_${tag}`);
      app.dispose();
    },
  );
});
