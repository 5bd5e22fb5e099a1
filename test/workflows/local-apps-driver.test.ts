import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import path from 'node:path';
import { AppLogWriter, MAX_LOG_BYTES } from '../../activities/provider/local/apps/log';
import { LocalAppsDriver } from '../../activities/provider/local/apps/driver';
import { detectIsolation, groupProcesses } from '../../activities/provider/local/sandbox/isolation';
import { imageRuntimeRefusal, PODMAN } from '../../activities/provider/local/images/runtime';
import { acceptsConnections } from '../../activities/provider/local/apps/public-ports';
import { freePort } from '../support/ports';
import { SecretBox } from '../../domain/secret-box';
import { createLogger } from '../../platform/logger';
import { freshDatabase, type TestDatabase } from '../support/db';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { insertApp } from '../support/app-rows';
import { FixtureBuilder, RecordingIngress, RecordingSink, tempLayout, runSpecOf } from '../support/local-apps';
import { eventually } from '../support/stack';

const isolation = detectIsolation();
const NO_PODMAN = imageRuntimeRefusal((file) => file !== PODMAN, true);
const itRoot = isolation.uidSwitch ? it : it.skip;
const itCgroups = isolation.cgroups ? it : it.skip;

function get(port: number, urlPath = '/'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: urlPath, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

let db: TestDatabase;
let ws: Workspace;
let temp: ReturnType<typeof tempLayout>;
let builder: FixtureBuilder;
let ingress: RecordingIngress;
let sink: RecordingSink;
let driver: LocalAppsDriver;
const secretBox = new SecretBox([{ kid: 't', key: randomBytes(32) }]);
const logger = createLogger('silent');
const TIMING = {
  backoffInitialMs: 100,
  backoffMaxMs: 400,
  healthyPeriodMs: 5000,
  bootDeadlineMs: 15_000,
  stopGraceMs: 2000,
};

function newDriver(): LocalAppsDriver {
  return new LocalAppsDriver({
    dataSource: db.ds,
    secretBox,
    layout: temp.layout,
    isolation,
    builder,
    ingress,
    events: sink,
    logger,
    host: '127.0.0.1',
    timing: TIMING,
    // as on a machine without podman (the image runtime's own tests run it: test/local/images*.test.ts)
    imagesRefusal: NO_PODMAN,
  });
}

beforeAll(async () => {
  db = await freshDatabase();
  ws = await seedWorkspace(db.ds);
  temp = tempLayout();
  builder = new FixtureBuilder(temp.layout, isolation.uidSwitch);
  ingress = new RecordingIngress();
  sink = new RecordingSink();
  driver = newDriver();
});

afterAll(async () => {
  // delete removes the apps' cgroups too (close keeps them for a resume)
  for (const { app_uuid: uuid } of await db.ds.query(`SELECT app_uuid FROM local_apps`)) await driver.delete(uuid);
  await driver.close();
  await db.drop();
  temp.cleanup();
});

/** An app row (quota, checks) provisioned on the driver. */
async function app(options: { replicas?: number; ramMiB?: number; healthChecks?: unknown[] } = {}): Promise<string> {
  const { uuid } = await insertApp(db.ds, ws);
  await db.ds.query(`UPDATE apps SET quota = $2, health_checks = $3 WHERE uuid = $1`, [
    uuid,
    JSON.stringify({
      cpu_size: 1,
      ram_size: (options.ramMiB ?? 512) * 2 ** 20,
      disk_size: 2 ** 30,
      replicas: options.replicas ?? 1,
    }),
    JSON.stringify(options.healthChecks ?? []),
  ]);
  await driver.provision({
    appUuid: uuid,
    name: 'a',
    resourceUuid: ws.resourceUuid,
    internalPort: 8080,
    cpuSize: 1,
    ramSize: 2 ** 29,
    diskSize: 2 ** 30,
    replicas: options.replicas ?? 1,
  });
  return uuid;
}

async function deployed(appUuid: string, fixture = 'sup-web', env: Record<string, string> = {}): Promise<void> {
  await driver.rollout(appUuid, builder.image(appUuid, fixture), await runSpecOf(db.ds, secretBox, appUuid, env));
  await eventually(async () => (await driver.status(appUuid)) !== 'starting', {
    timeoutMs: 20_000,
    what: 'the rollout to settle',
  });
}

const logOf = (appUuid: string) => {
  try {
    return readFileSync(temp.layout.appLogFile(appUuid), 'utf8');
  } catch {
    return '';
  }
};

describe('local apps driver', () => {
  it('runs each replica as a process answering on its own PORT, with the rollout environment, logged line by line', async () => {
    const a = await app({ replicas: 2 });
    await deployed(a, 'sup-web', { GREETING: 'hello-there' });
    expect(await driver.status(a)).toBe('running');
    const ports = ingress.ports(a);
    expect(ports).toHaveLength(2);
    const answers = await Promise.all(ports.map(async (p) => JSON.parse((await get(p)).body)));
    expect(answers.map((x) => x.port).sort()).toEqual([...ports].sort());
    expect(new Set(answers.map((x) => x.boot)).size).toBe(2);
    expect(answers[0].secret).toBe('hello-there');
    if (isolation.uidSwitch) expect(answers[0].uid).toBeGreaterThanOrEqual(200_000);
    const log = logOf(a);
    expect(log).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z web\.1 sup-web listening on \d+$/m);
    expect(log).toMatch(/Z web\.2 sup-web listening on/);
    expect(log).toMatch(/Z berth web\.1 started \(pid \d+/);
    expect(log).not.toContain('hello-there');
    expect(await driver.currentImage(a)).toMatch(new RegExp(`^local-release:${a}/`));
    // the environment is kept sealed for a restart of Berth
    const row = (await db.ds.query(`SELECT run_sealed FROM local_apps WHERE app_uuid = $1`, [a]))[0];
    expect(row.run_sealed).not.toContain('hello-there');
  });

  it('restart rolls the replicas (new pid); stop leaves nothing listening; scale to zero sends no events', async () => {
    const a = await app();
    await deployed(a);
    const [port] = ingress.ports(a);
    const before = JSON.parse((await get(port!)).body).boot;
    await driver.restart(a, await runSpecOf(db.ds, secretBox, a));
    await eventually(async () => (await driver.status(a)) === 'running', { what: 'running after restart' });
    const [port2] = ingress.ports(a);
    const after = JSON.parse((await get(port2!)).body).boot;
    expect(after).not.toBe(before);

    await driver.stop(a);
    expect(await driver.status(a)).toBe('stopped');
    expect(ingress.ports(a)).toEqual([]);
    expect(await acceptsConnections('127.0.0.1', port2!, 500)).toBe(false);
    // the sandboxes' processes are on their way out once their launchers have exited
    await eventually(async () => (groupProcesses(isolation, { kind: 'app', id: a }).length === 0 ? true : undefined), {
      what: "the app's cgroup empty after stop",
      timeoutMs: 5000,
    });

    await driver.start(a, await runSpecOf(db.ds, secretBox, a));
    await eventually(async () => (await driver.status(a)) === 'running', { what: 'running after start' });
    const [port3] = ingress.ports(a);
    await driver.scaleToZero(a);
    expect(await driver.status(a)).toBe('scaled_to_zero');
    expect(await acceptsConnections('127.0.0.1', port3!, 500)).toBe(false);
    expect(sink.of(a)).toEqual([]);
  });

  it('EVT-06 a replica that keeps crashing: restarts with backoff, app_crash_loop once (failed), then app_stopped', async () => {
    const a = await app();
    await deployed(a, 'sup-web', { CRASH_AFTER_MS: '700' });
    await eventually(async () => sink.of(a).some((e) => e.value === 'app_stopped'), {
      timeoutMs: 40_000,
      what: 'app_stopped',
    });
    const events = sink.of(a).map((e) => e.value);
    expect(events.filter((e) => e === 'app_crash_loop')).toHaveLength(1);
    expect(events.indexOf('app_crash_loop')).toBeLessThan(events.indexOf('app_stopped'));
    expect(events).toContain('failed');
    const loop = sink.of(a).find((e) => e.value === 'app_crash_loop')!;
    expect(loop.detail).toMatch(/^web\.1 exited with code 3: sup-web: crashing on purpose/);
    expect(await driver.status(a)).toBe('failed');
    expect(ingress.ports(a)).toEqual([]);
    const log = logOf(a);
    expect(log).toMatch(/berth web\.1 exited with code 3, restarting in 0\.1 s/);
    expect(log).toMatch(/berth web\.1 exited with code 3, restarting in 0\.2 s/);
    expect(log).toMatch(/giving up after 5 crashes in a row/);
  });

  it('a rollout to a release that crashes at boot keeps the old release serving and says why', async () => {
    const a = await app();
    await deployed(a);
    const [port] = ingress.ports(a);
    const boot = JSON.parse((await get(port!)).body).boot;
    await driver.rollout(a, builder.image(a, 'sup-crash'), await runSpecOf(db.ds, secretBox, a));
    expect(await driver.status(a)).toBe('starting');
    await eventually(async () => (await driver.status(a)) !== 'starting', { what: 'the rollout to settle' });
    expect(await driver.status(a)).toBe('running');
    expect(await driver.rolloutFailure(a)).toBe(
      'the release exited at boot with code 1: sup-crash: cannot reach the database at 127.0.0.1:1',
    );
    expect(ingress.ports(a)).toEqual([port]);
    expect(JSON.parse((await get(port!)).body).boot).toBe(boot);
    // a later good rollout clears the reason and takes over
    await deployed(a);
    expect(await driver.rolloutFailure(a)).toBeNull();
    expect(ingress.ports(a)).not.toEqual([port]);
    expect(await acceptsConnections('127.0.0.1', port!, 500)).toBe(false);
  });

  it('a newer rollout supersedes one still booting: only the newer release serves', async () => {
    const a = await app();
    await driver.rollout(a, builder.image(a, 'sup-web'), await runSpecOf(db.ds, secretBox, a, { RELEASE: 'one' }));
    await driver.rollout(a, builder.image(a, 'sup-web'), await runSpecOf(db.ds, secretBox, a, { RELEASE: 'two' }));
    await eventually(async () => (await driver.status(a)) === 'running', { what: 'running' });
    const ports = ingress.ports(a);
    expect(ports).toHaveLength(1);
    expect(JSON.parse((await get(ports[0]!)).body).release).toBe('two');
    expect((logOf(a).match(/ web\.1 \S+ listening on/g) ?? []).length).toBeLessThanOrEqual(2);
  });

  it('a static release is served by the ingress from its folder, with no process', async () => {
    const a = await app();
    const image = builder.image(a, 'sup-static');
    await driver.rollout(a, image, await runSpecOf(db.ds, secretBox, a));
    await eventually(async () => (await driver.status(a)) === 'running', { what: 'running' });
    const releaseId = image.split('/').pop()!;
    expect(ingress.backends.get(a)).toEqual([
      { kind: 'static', root: path.join(temp.layout.releaseDir(a, releaseId), '.') },
    ]);
    expect(logOf(a)).not.toMatch(/web\.1 started/);
  });

  it('a first rollout that crashes at boot leaves the app failed with the reason', async () => {
    const a = await app();
    await deployed(a, 'sup-crash');
    expect(await driver.status(a)).toBe('failed');
    expect(await driver.rolloutFailure(a)).toMatch(/^the release exited at boot with code 1: sup-crash: cannot reach/);
    expect(await driver.currentImage(a)).toBeNull();
  });

  it('APP-14 a readiness check that starts failing: app_unhealthy, live status problem, out of the ingress', async () => {
    const a = await app({
      healthChecks: [
        {
          kind: 'readiness',
          protocol: 'http',
          path: '/health',
          port: 8080,
          initial_delay_seconds: 0,
          period_seconds: 1,
          timeout_seconds: 1,
          failure_threshold: 2,
        },
      ],
    });
    await deployed(a, 'sup-web', { HEALTH_FAIL_AFTER_MS: '1500' });
    await eventually(async () => (await driver.status(a)) === 'problem', { what: 'problem' });
    expect(sink.of(a).map((e) => e.value)).toEqual(['app_unhealthy', 'problem']);
    expect(sink.of(a)[0]!.detail).toBe('web.1 failed its readiness check 2 times');
    expect(ingress.ports(a)).toEqual([]);
  });

  it('a failing liveness check restarts the replica', async () => {
    const a = await app({
      healthChecks: [
        {
          kind: 'liveness',
          protocol: 'http',
          path: '/health',
          port: 8080,
          initial_delay_seconds: 0,
          period_seconds: 1,
          timeout_seconds: 1,
          failure_threshold: 1,
        },
      ],
    });
    await deployed(a, 'sup-web', { HEALTH_FAIL_AFTER_MS: '1000' });
    await eventually(async () => /web\.1 was killed: failed its liveness check 1 times, restarting/.test(logOf(a)), {
      what: 'a liveness restart',
    }).catch((err) => {
      throw new Error(`${(err as Error).message}\n${logOf(a)}`);
    });
  });

  it('public ports forward: the web port to the replicas, another port to the loopback; private again closes it', async () => {
    const a = await app();
    const extra = await freePort();
    await deployed(a, 'sup-web', { EXTRA_PORT: String(extra) });
    const [webPublic, extraPublic] = [await freePort(), await freePort()];
    await driver.applyPorts(a, [
      { internalPort: 8080, protocol: 'tcp', externalPort: webPublic },
      { internalPort: extra, protocol: 'tcp', externalPort: extraPublic },
    ]);
    expect(JSON.parse((await get(webPublic)).body).release).toBe('sup-web');
    expect((await get(extraPublic)).body).toBe('extra');
    await driver.applyPorts(a, [
      { internalPort: 8080, protocol: 'tcp', externalPort: webPublic },
      { internalPort: extra, protocol: 'tcp', externalPort: null },
    ]);
    expect(await acceptsConnections('127.0.0.1', extraPublic, 500)).toBe(false);
    expect(await acceptsConnections('127.0.0.1', webPublic, 500)).toBe(true);
    await driver.delete(a);
    expect(await acceptsConnections('127.0.0.1', webPublic, 500)).toBe(false);
    expect(await driver.status(a)).toBe('absent');
    expect(ingress.removed).toContain(a);
  });

  it('a restart of Berth starts again what should run (state in local_apps), and not what was stopped', async () => {
    const a = await app();
    const b = await app();
    await deployed(a, 'sup-web', { GREETING: 'kept-sealed' });
    await deployed(b);
    await driver.stop(b);
    await driver.close();
    driver = newDriver();
    await driver.resume();
    await eventually(async () => (await driver.status(a)) === 'running', { what: 'a running again' });
    const [port] = ingress.ports(a);
    expect(JSON.parse((await get(port!)).body).secret).toBe('kept-sealed');
    expect(await driver.status(b)).toBe('stopped');
  });

  it('clone: the release and the volume are copied; dropVolume empties it', async () => {
    const a = await app();
    await deployed(a);
    writeFileSync(path.join(temp.layout.volumeDir(a), 'data.txt'), 'volume data');
    const b = await app();
    await driver.cloneImage(a, b, { shared: false });
    await driver.cloneVolume(a, b);
    expect(readFileSync(path.join(temp.layout.volumeDir(b), 'data.txt'), 'utf8')).toBe('volume data');
    await driver.start(b, await runSpecOf(db.ds, secretBox, b));
    await eventually(async () => (await driver.status(b)) === 'running', { what: 'the clone running' });
    expect(await driver.currentImage(b)).toMatch(new RegExp(`^local-release:${b}/`));
    await driver.dropVolume(b);
    expect(() => readFileSync(path.join(temp.layout.volumeDir(b), 'data.txt'))).toThrow();
  });

  it("builds: container images are refused naming the missing package; parent_image copies the parent's release", async () => {
    const a = await app();
    const d1 = randomUUID();
    await driver.startBuild({
      appUuid: a,
      deploymentUuid: d1,
      method: 'container_registry',
      builder: 'auto',
      commitSha: null,
      image: 'nginx:1',
    });
    expect(await driver.buildStatus(d1)).toEqual({
      status: 'failed',
      reason: NO_PODMAN,
    });
    await deployed(a);
    const child = await app();
    const d2 = randomUUID();
    await driver.startBuild({
      appUuid: child,
      deploymentUuid: d2,
      method: 'parent_image',
      builder: 'auto',
      commitSha: null,
      image: await driver.currentImage(a),
    });
    const built = await driver.buildStatus(d2);
    expect(built).toEqual({
      status: 'succeeded',
      image: expect.stringMatching(new RegExp(`^local-release:${child}/`)),
    });
    const d3 = randomUUID();
    await driver.startBuild({
      appUuid: child,
      deploymentUuid: d3,
      method: 'git_push',
      builder: 'auto',
      commitSha: 'abc',
      image: null,
      repository: 'sup-web',
    });
    expect(await driver.buildStatus(d3)).toEqual({
      status: 'succeeded',
      image: expect.stringMatching(/^local-release:/),
    });
  });

  itRoot(
    "the app runs as its own uid: it cannot read Berth's private files nor the data dir's secret.key",
    async () => {
      const secretKey = path.join(temp.dataDir, 'secret.key');
      writeFileSync(secretKey, 'top-secret-key', { mode: 0o600 });
      const privateFile = path.join(temp.layout.privateRoot, 'state.json');
      writeFileSync(privateFile, '{}', { mode: 0o644 });
      const a = await app();
      await deployed(a);
      const [port] = ingress.ports(a);
      for (const file of [secretKey, privateFile, temp.layout.appLogFile(a)]) {
        // with a view of its own the files are not even there; without, the uid keeps them closed
        const refused = isolation.view ? 'ENOENT' : 'EACCES';
        expect(await get(port!, `/read?path=${encodeURIComponent(file)}`)).toEqual({ status: 403, body: refused });
      }
      // its own release and home are its to read
      expect(
        (await get(port!, `/read?path=${encodeURIComponent(path.join(temp.layout.appDir(a), 'releases'))}`)).status,
      ).toBe(200);
      expect((await get(port!, `/read?path=${encodeURIComponent(temp.layout.homeDir(a))}`)).status).toBe(200);
    },
  );

  (isolation.view ? it : it.skip)(
    "a replica's view: only its own processes, a /tmp of its own, no other app's folders and no platform data",
    async () => {
      const a = await app();
      const b = await app();
      await deployed(a);
      await deployed(b);
      const [port] = ingress.ports(a);
      const read = async (p: string) => get(port!, `/read?path=${encodeURIComponent(p)}`);
      // the machine's processes (Berth, PostgreSQL, Temporal) are not listed: a PID namespace
      const pids = (await read('/proc')).body.split(',').filter((e) => /^\d+$/.test(e));
      expect(pids.length).toBeGreaterThan(0);
      expect(pids.length).toBeLessThan(10);
      for (const pid of pids) expect((await read(`/proc/${pid}/cmdline`)).body).not.toMatch(/postgres|temporal|jest/);
      // the machine's /tmp is not its /tmp
      const marker = path.join('/tmp', `berth-view-${randomUUID()}`);
      writeFileSync(marker, 'host');
      try {
        expect(await read(marker)).toEqual({ status: 403, body: 'ENOENT' });
      } finally {
        rmSync(marker, { force: true });
      }
      // another app's release and home, Berth's private folder: not there
      for (const other of [temp.layout.appDir(b), temp.layout.homeDir(b), temp.layout.privateRoot])
        expect(await read(other)).toEqual({ status: 403, body: 'ENOENT' });
    },
  );

  itCgroups('a replica that allocates past its ram quota is OOM-killed and says so', async () => {
    const a = await app({ ramMiB: 128 });
    await deployed(a);
    const [port] = ingress.ports(a);
    await get(port!, '/alloc?mb=400').catch(() => null);
    await eventually(
      async () => /berth web\.1 was killed: exceeded its ram quota of 128 MiB, restarting/.test(logOf(a)),
      { what: 'the OOM kill in the log' },
    );
  });
});

describe('app log writer', () => {
  it('starts the log over past its size, the previous part kept as .1, with no line lost or split', async () => {
    const writer = new AppLogWriter(temp.layout);
    const appUuid = randomUUID();
    const line = 'y'.repeat(1000);
    const count = Math.ceil(MAX_LOG_BYTES / 1000) + 50;
    for (let i = 0; i < count; i++) writer.write(appUuid, 'web.1', `${i} ${line}`);
    await writer.close();
    const file = temp.layout.appLogFile(appUuid);
    const numbers = [`${file}.1`, file].flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => Number(l.split(' ')[2])),
    );
    expect(numbers).toEqual(Array.from({ length: count }, (_, i) => i));
    expect(readFileSync(`${file}.1`).length).toBeGreaterThan(MAX_LOG_BYTES);
    expect(readFileSync(file).length).toBeLessThan(MAX_LOG_BYTES / 8);
  });
});
