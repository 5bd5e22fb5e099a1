import { execFileSync } from 'node:child_process';
import { connect } from 'node:net';
import path from 'node:path';
import request from 'supertest';
import { eventually } from '../support/stack';
import { RECEIVER_ALLOW, startReceiver, type Receiver } from '../support/webhooks';
import { healthyAddon } from './support/addons';
import { startBerthDev, type BerthDev } from './support/berth-dev';
import { workingCopy } from '../support/working-copy';
import { detectIsolation } from '../../activities/provider/local/sandbox/isolation';

/**
 * The platform really hosts: `berth dev` (npm start) on the local driver, apps pushed with
 * the real git client, built from their commit, run as real processes behind the real
 * ingress. One stack for the whole file; each test uses apps of its own.
 */
jest.setTimeout(300_000);

const IDLE_S = 12;
let berth: BerthDev;
let receiver: Receiver;
let api: ReturnType<typeof request>;
let auth: Record<string, string>;
let standard: string;
let free: string;

/** Whether nothing listens on the loopback port (a stopped replica's). */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });
}

/** `git push` with the token as the password; answers what the pusher's terminal shows. */
function push(dir: string, gitUrl: string): string {
  return berth.push(dir, gitUrl);
}

async function createApp(name: string, resource: string, body: Record<string, unknown> = {}): Promise<any> {
  return (
    await api
      .post('/api/v1/apps')
      .set(auth)
      .send({ name, resource_id: resource, deployment_method: 'git_push', ...body })
      .expect(201)
  ).body;
}

async function appState(uuid: string): Promise<string> {
  return (await api.get(`/api/v1/apps/${uuid}`).set(auth).expect(200)).body.state;
}

async function deployments(uuid: string): Promise<any[]> {
  return (await api.get(`/api/v1/apps/${uuid}/deployments`).set(auth).expect(200)).body;
}

/** curl as a user runs it (it resolves `*.localhost` to loopback itself): the body. */
function curl(args: string[]): string {
  return execFileSync('curl', ['-sS', '--fail', ...args], { encoding: 'utf8' });
}

/** A request to the app's public URL (HTTPS through the ingress, the local CA trusted). */
function viaIngress(app: { url?: string; name: string; public_url?: string }, pathname = '/') {
  return berth.viaPublicUrl(app.public_url ?? app.url ?? `https://${app.name}.invalid`, pathname);
}

function eventsOf(type: string, appUuid: string): any[] {
  return receiver.hits.map((h) => JSON.parse(h.body)).filter((e) => e.type === type && e.data?.app_id === appUuid);
}

beforeAll(async () => {
  receiver = await startReceiver();
  berth = await startBerthDev({ BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW, BERTH_APP_IDLE_TIMEOUT_S: String(IDLE_S) });
  api = request(berth.apiUrl);
  auth = { Authorization: `Bearer ${berth.token}` };
  await api.post('/api/v1/webhooks').set(auth).send({ url: receiver.url }).expect(201);
  const resources = (await api.get('/api/v1/resources').set(auth).expect(200)).body;
  standard = resources[0].uuid;
  const created = await berth.cli([
    'resource',
    'create',
    '--name',
    'free-tier',
    '--region',
    resources[0].region.code,
    '--plan',
    'free',
  ]);
  expect(created).toMatchObject({ code: 0 });
  free = created.stdout.trim().split('\n').pop()!.trim();
});

afterAll(async () => {
  await berth?.stop();
  await receiver?.close();
});

describe('the local driver hosts pushed apps', () => {
  it('boots with the local driver and says so in the banner and the resource labels', async () => {
    expect(berth.output()).toMatch(/local/i);
    const resources = (await api.get('/api/v1/resources').set(auth).expect(200)).body;
    for (const r of resources) expect(r.labels).toContain('berth.driver=local');
  });

  let web: any;
  let wc: ReturnType<typeof workingCopy>;

  it('APP-01 DEP-06 a git push to <name>.git builds the app, runs it and serves it through the ingress; its boot line is in its logs', async () => {
    web = await createApp('web', standard);
    expect(web.git_url).toBe(`${berth.apiUrl}/git/${web.name}.git`);
    wc = workingCopy('e2e-web');
    const out = push(wc.dir, web.git_url);
    expect(out).toMatch(/remote: /);
    expect(out).toMatch(new RegExp(`deployed: https?://${web.name}`));
    const [d] = await deployments(web.uuid);
    expect(d).toMatchObject({ state: 'completed', commit_sha: wc.head() });
    expect(d.logs_stored_at).not.toBeNull();
    const build = (await api.get(`/api/v1/apps/${web.uuid}/deployments/${d.uuid}/logs`).set(auth).expect(200)).body;
    expect(build.map((l: any) => l.message).join('\n')).toMatch(/npm/);
    await eventually(async () => (await appState(web.uuid)) === 'running', { what: 'running', timeoutMs: 60_000 });
    const res = await viaIngress(web).expect(200);
    expect(res.text).toBe('hello from e2e-web v1\n');
    // the URL answers exactly as printed, as a user's curl reaches it; plain HTTP redirects to it
    expect(out.split('\n').some((l) => l.trim() === `remote: deployed: ${web.public_url}`)).toBe(true);
    expect(web.public_url).toBe(`https://${web.name}.local.berth.localhost:${berth.ingressTlsPort}`);
    expect(curl(['--cacert', berth.localCaFile, web.public_url])).toBe('hello from e2e-web v1\n');
    const plain = await request(berth.ingressUrl).get('/x?y=1').set('Host', new URL(web.public_url).hostname);
    expect(plain.status).toBe(308);
    expect(plain.headers.location).toBe(`${web.public_url}/x?y=1`);
    expect(berth.output()).toContain(berth.localCaFile);
    const logs = (await api.get(`/api/v1/apps/${web.uuid}/logs`).query({ tail: 50 }).set(auth).expect(200)).body;
    expect(logs.map((l: any) => l.message)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^e2e-web listening on \d+$/)]),
    );
  });

  it('restart changes the serving process; stop leaves nothing listening', async () => {
    const before = (await viaIngress(web, '/boot').expect(200)).text.trim();
    const port = Number((await viaIngress(web, '/port').expect(200)).text.trim());
    await api.patch(`/api/v1/apps/${web.uuid}/state`).set(auth).send({ action: 'restart' }).expect(202);
    await eventually(
      async () => {
        const r = await viaIngress(web, '/boot');
        return r.status === 200 && r.text.trim() !== before ? r.text.trim() : undefined;
      },
      { what: 'a new process', timeoutMs: 60_000 },
    );
    // the old replica is stopped once the new one serves: nothing listens where it did
    await eventually(async () => refused(port), { what: 'the old process gone', timeoutMs: 20_000 });

    const servingPort = Number((await viaIngress(web, '/port').expect(200)).text.trim());
    await eventually(async () => ['running'].includes(await appState(web.uuid)), { what: 'running after restart' });
    await api.patch(`/api/v1/apps/${web.uuid}/state`).set(auth).send({ action: 'stop' }).expect(202);
    await eventually(async () => (await appState(web.uuid)) === 'stopped', { what: 'stopped' });
    for (const p of new Set([port, servingPort])) expect(await refused(p)).toBe(true);
    expect((await viaIngress(web)).status).toBe(503);
    await api.patch(`/api/v1/apps/${web.uuid}/state`).set(auth).send({ action: 'start' }).expect(202);
    await eventually(async () => (await viaIngress(web)).status === 200, { what: 'served again', timeoutMs: 60_000 });
  });

  it('an add-on attached to a running app is in its environment after a restart and in the release the next git push rolls out', async () => {
    const addon = await healthyAddon(api, auth, web.uuid, { type: 'postgres', label: 'main' });
    const url = addon.connection_details.internal.connection_url as string;
    expect(url).toMatch(/^postgres(ql)?:\/\//);
    const databaseUrl = async (what: string) =>
      eventually(
        async () => {
          const r = await viaIngress(web, '/env?key=DATABASE_URL');
          return r.status === 200 && r.text.trim() ? r.text.trim() : undefined;
        },
        { what, timeoutMs: 60_000 },
      );
    // a restart runs the environment the control plane holds now, not one sealed at the last rollout
    await api.patch(`/api/v1/apps/${web.uuid}/state`).set(auth).send({ action: 'restart' }).expect(202);
    expect(await databaseUrl('DATABASE_URL inside the restarted app')).toBe(url);
    wc.commit({ 'RELEASE_NOTE.txt': 'with a database\n' }, 'a release after the add-on');
    expect(push(wc.dir, web.git_url)).toMatch(/deployed: /);
    expect(await databaseUrl('DATABASE_URL inside the pushed release')).toBe(url);
    await api.delete(`/api/v1/apps/${web.uuid}/addons/${addon.uuid}`).set(auth).expect(202);
  });

  it('EVT-02 a pushed release that exits at boot fails its deployment with the reason, and the previous release still serves', async () => {
    wc.commit(
      { 'server.js': "console.error('boot failed: missing DATABASE_URL'); process.exit(1);\n" },
      'break the boot',
    );
    const out = push(wc.dir, web.git_url);
    expect(out).toMatch(/failed: /);
    const [d] = await deployments(web.uuid);
    expect(d.state).toBe('failed');
    const ended = await eventually(
      async () => eventsOf('deploy_ended', web.uuid).find((e) => e.data.deployment_id === d.uuid),
      { what: 'deploy_ended' },
    );
    expect(ended.data.state).toBe('failed');
    expect(ended.data.message).toMatch(/exit|boot/i);
    expect((await viaIngress(web).expect(200)).text).toBe('hello from e2e-web v1\n');
  });

  it('APP-05 basic auth answers 401 without and 200 with credentials; a private app is not routed', async () => {
    await api
      .put(`/api/v1/apps/${web.uuid}/security`)
      .set(auth)
      .send({ basic_auth_enabled: true, basic_auth_username: 'guest', basic_auth_password: 'let-me-in-please' })
      .expect(200);
    await eventually(async () => (await viaIngress(web)).status === 401, { what: '401' });
    await viaIngress(web).auth('guest', 'let-me-in-please').expect(200);
    await api
      .put(`/api/v1/apps/${web.uuid}/security`)
      .set(auth)
      .send({ basic_auth_enabled: false, private_access: true })
      .expect(200);
    await eventually(async () => (await viaIngress(web)).status === 404, { what: 'not routed' });
    await api.put(`/api/v1/apps/${web.uuid}/security`).set(auth).send({ private_access: false }).expect(200);
    await eventually(async () => (await viaIngress(web)).status === 200, { what: 'routed again' });
  });

  it('PRT-01 PRT-02 PRT-03 a TCP client on the external port (from the pool, not the internal one) reaches the app; make_private closes it, expose_publicly opens it again', async () => {
    const internalPort = Number(web.internal_url.split(':').pop());
    const port = (
      await api.post(`/api/v1/apps/${web.uuid}/ports`).set(auth).send({ port: internalPort, public: true }).expect(201)
    ).body;
    expect(port.external_port).not.toBe(internalPort);
    expect(port.public_endpoint).toBe(`${port.endpoint_hostname}:${port.external_port}`);
    for (const f of ['endpoint_id', 'endpoint_hostname', 'endpoint_ipv4_primary', 'endpoint_ipv6_primary'])
      expect(typeof port[f]).toBe('string');
    const ask = (externalPort: number) =>
      new Promise<string | undefined>((resolve) => {
        const s = connect(externalPort, '127.0.0.1');
        let text = '';
        s.once('connect', () => s.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
        s.on('data', (d) => {
          text += d.toString();
        });
        s.once('end', () => resolve(text));
        s.once('error', () => resolve(undefined));
      });
    const answer = await eventually(() => ask(port.external_port), { what: 'the forwarded port' });
    expect(answer).toMatch(/hello from e2e-web/);
    await api.patch(`/api/v1/apps/${web.uuid}/ports/${port.id}/make_private`).set(auth).expect(200);
    await eventually(async () => ((await ask(port.external_port)) === undefined ? true : undefined), {
      what: 'the external port closed',
    });
    const exposed = (await api.patch(`/api/v1/apps/${web.uuid}/ports/${port.id}/expose_publicly`).set(auth).expect(200))
      .body;
    expect(exposed.public_endpoint).toBe(`${exposed.endpoint_hostname}:${exposed.external_port}`);
    expect(await eventually(() => ask(exposed.external_port), { what: 'the port public again' })).toMatch(
      /hello from e2e-web/,
    );
  });

  it("an app process cannot read Berth's secret key nor its databases, and one allocating past its ram quota is killed and reported", async () => {
    const denied = await viaIngress(web, `/read?path=${encodeURIComponent(path.join(berth.dataDir, 'secret.key'))}`);
    expect(denied.status).toBe(403);
    // not even there for an app with a view of its own; closed to its uid otherwise
    const closedAs = detectIsolation().view ? 'ENOENT' : 'EACCES';
    expect(denied.text.trim()).toBe(closedAs);
    for (const file of ['temporal.db', 'postgres/password']) {
      const closed = await viaIngress(web, `/read?path=${encodeURIComponent(path.join(berth.dataDir, file))}`);
      expect(`${file}: ${closed.status} ${closed.text.trim()}`).toBe(`${file}: 403 ${closedAs}`);
    }
    const boot = (await viaIngress(web, '/boot').expect(200)).text.trim();
    const quotaMb = web.quota.ram_size / 2 ** 20;
    await viaIngress(web, `/alloc?mb=${Math.ceil(quotaMb * 2)}`).catch(() => undefined);
    await eventually(
      async () => {
        const logs = (await api.get(`/api/v1/apps/${web.uuid}/logs`).query({ tail: 200 }).set(auth).expect(200)).body;
        return logs.some((l: any) => /ram quota/.test(l.message));
      },
      { what: 'the OOM kill in the app log', timeoutMs: 60_000 },
    );
    await eventually(
      async () => {
        const r = await viaIngress(web, '/boot');
        return r.status === 200 && r.text.trim() !== boot;
      },
      { what: 'a restarted replica', timeoutMs: 60_000 },
    );
  });

  it('EVT-05 a crashing app yields app_crash_loop and then app_stopped', async () => {
    const crash = await createApp('crash', standard);
    await api
      .put(`/api/v1/apps/${crash.uuid}/variables`)
      .set(auth)
      .send({ variables: [{ key: 'CRASH_AFTER_MS', value: '4000' }] })
      .expect(200);
    const copy = workingCopy('crash-loop');
    push(copy.dir, crash.git_url);
    const loop = await eventually(async () => eventsOf('app_crash_loop', crash.uuid)[0], {
      what: 'app_crash_loop',
      timeoutMs: 120_000,
    });
    const stopped = await eventually(async () => eventsOf('app_stopped', crash.uuid)[0], {
      what: 'app_stopped',
      timeoutMs: 180_000,
    });
    for (const e of [loop, stopped]) {
      expect(e.data).toMatchObject({
        resource_name: 'local-1',
        labels: expect.arrayContaining(['berth.driver=local']),
      });
      expect(e.data.message).toMatch(/exited with code 3/);
    }
    await eventually(async () => (await appState(crash.uuid)) === 'stopped', { what: 'stopped' });
    copy.dispose();
  });

  it('APP-15 APP-16 a free-plan app sleeps after the idle time, wakes on a request with 503 + Retry-After, and sends no event', async () => {
    const nap = await createApp('nap', free);
    const copy = workingCopy('e2e-web');
    expect(push(copy.dir, nap.git_url)).toMatch(/deployed: /);
    await viaIngress(nap).expect(200);
    const napPort = Number((await viaIngress(nap, '/port').expect(200)).text.trim());
    const stateEvents = () => eventsOf('app_state_changed', nap.uuid).length + eventsOf('app_stopped', nap.uuid).length;
    const eventsBefore = stateEvents();
    await eventually(async () => (await appState(nap.uuid)) === 'sleeping', {
      what: 'sleeping',
      timeoutMs: (IDLE_S + 60) * 1000,
    });
    await eventually(async () => refused(napPort), { what: 'process gone' });
    const woke = await viaIngress(nap);
    expect(woke.status).toBe(503);
    expect(woke.headers['retry-after']).toBeDefined();
    await eventually(async () => (await viaIngress(nap)).status === 200, {
      what: 'served after waking',
      timeoutMs: 60_000,
    });
    expect(stateEvents()).toBe(eventsBefore);
    copy.dispose();
    wc.dispose();
  });
});
