import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { DEPLOYABLE_STATES } from '../../domain/apps';
import { systemAppsDir } from '../../platform/local-layout';
import { ROOT } from '../support/env';
import { eventually } from '../support/stack';
import { localRepo } from '../support/git';
import {
  addBusybox,
  busyboxDockerfile,
  imageTestsMissing,
  pushTestImage,
  startTestRegistry,
  TEST_IMAGE_PAGE,
  type TestRegistry,
} from '../support/images';
import { appIdBase } from '../../activities/provider/local/images/id-range';
import { startBerthDev, type BerthDev } from './support/berth-dev';
import { deployStack } from './support/stacks';

/**
 * Issue 27, container_registry apps on the local driver, end to end: `berth dev` pulls an
 * image from a registry that wants a login (a test registry on loopback, the image built
 * here), runs it with podman and serves it through the ingress; with a wrong login the
 * deployment fails with the registry's reason, and the login's secret is nowhere.
 */
jest.setTimeout(300_000);

const missing = imageTestsMissing();
if (missing) console.warn(`image tests skipped: ${missing}`);
const describeImages = missing ? describe.skip : describe;

let berth: BerthDev;
let registry: TestRegistry;
let image: string;
let api: ReturnType<typeof request>;
let auth: Record<string, string>;
let resource: string;

beforeAll(async () => {
  if (missing) return;
  registry = await startTestRegistry();
  image = pushTestImage(registry);
  // the test registries are on loopback: the operator's allow-list lets 127.0.0.1 through (registry-reach.ts)
  berth = await startBerthDev({ BERTH_GIT_ALLOW_FILE_URLS: '1', BERTH_REGISTRY_ALLOW_CIDRS: '127.0.0.1/32' });
  api = request(berth.apiUrl);
  auth = { Authorization: `Bearer ${berth.token}` };
  resource = (await api.get('/api/v1/resources').set(auth).expect(200)).body[0].uuid;
});

afterAll(async () => {
  await berth?.stop();
  await registry?.stop();
});

async function credential(name: string, token: string): Promise<string> {
  const res = await api
    .post('/api/v1/container_registry_credentials')
    .set(auth)
    .send({ name, registry: 'generic', registry_hostname: registry.host, username: registry.username, token })
    .expect(201);
  return res.body.uuid;
}

/** Creates the image app and deploys it; answers the app and the finished deployment. */
async function deployImage(name: string, credentialId: string, ref = image): Promise<{ app: any; deployment: any }> {
  const app = (
    await api
      .post('/api/v1/apps')
      .set(auth)
      .send({
        name,
        resource_id: resource,
        deployment_method: 'container_registry',
        deployment_config: { image: ref, credential_id: credentialId },
      })
      .expect(201)
  ).body;
  const deployment = await deployed(app.uuid);
  return { app: (await api.get(`/api/v1/apps/${app.uuid}`).set(auth).expect(200)).body, deployment };
}

/** Deploys the app once it can be and waits for the deployment's end; answers it. */
async function deployed(appUuid: string): Promise<any> {
  await eventually(
    async () => DEPLOYABLE_STATES.includes((await api.get(`/api/v1/apps/${appUuid}`).set(auth)).body.state),
    {
      what: 'the app deployable',
      timeoutMs: 60_000,
    },
  );
  const posted = await api.post(`/api/v1/apps/${appUuid}/deployments`).set(auth).send({});
  expect([posted.status, posted.body.detail]).toEqual([202, undefined]);
  const started = posted.body;
  let deployment: any;
  await eventually(
    async () => {
      deployment = (await api.get(`/api/v1/apps/${appUuid}/deployments/${started.uuid}`).set(auth).expect(200)).body;
      return ['completed', 'failed', 'cancelled'].includes(deployment.state);
    },
    { what: 'the deployment finished', timeoutMs: 120_000 },
  );
  return deployment;
}

/** The app's containers (`<name> <image>`), as the podman Berth runs sees them (its configuration under the data dir). */
function containersOf(appUuid: string): string[] {
  const out = podman(['ps', '--filter', `label=berth.app=${appUuid}`, '--format', '{{.Names}} {{.Image}}']);
  return out.split('\n').filter(Boolean);
}

/** A podman command with Berth's configuration (under its data dir): its output. */
function podman(args: string[]): string {
  const conf = path.join(berth.dataDir, 'local', 'podman');
  return execFileSync('podman', args, {
    env: {
      PATH: process.env.PATH,
      CONTAINERS_CONF: path.join(conf, 'containers.conf'),
      CONTAINERS_STORAGE_CONF: path.join(conf, 'storage.conf'),
    },
    encoding: 'utf8',
  });
}

/** The embedded platform registry of this Berth (the banner's host, the login under its data dir). */
function platformRegistry(): { host: string; password: string } {
  const host = /Image registry\s+(\S+)/.exec(berth.output())![1]!;
  const password = readFileSync(path.join(berth.dataDir, 'local', 'registry', 'password'), 'utf8').trim();
  return { host, password };
}

async function buildLog(appUuid: string, deploymentUuid: string): Promise<string> {
  const res = await api.get(`/api/v1/apps/${appUuid}/deployments/${deploymentUuid}/logs`).set(auth).expect(200);
  return res.body.map((l: any) => l.message).join('\n');
}

describeImages('container_registry apps on the local driver (podman)', () => {
  it('an image from a registry that wants a login is pulled with the credential, pinned to its digest, and serves through the ingress', async () => {
    const { app, deployment } = await deployImage('imaged', await credential('good', registry.password));
    expect(deployment).toMatchObject({ state: 'completed' });
    const log = await buildLog(app.uuid, deployment.uuid);
    expect(log).toContain(`pulling ${image}`);
    expect(log).toMatch(new RegExp(`pulled ${registry.host}/acme/hello@sha256:[0-9a-f]{64}`));
    // the release runs the image from the platform registry, where it was pushed, by its digest there
    const platform = platformRegistry();
    const released = new RegExp(
      `release image-[0-9a-f]{12} runs ${platform.host}/berth/${app.uuid}@(sha256:[0-9a-f]{64})`,
    );
    expect(log).toMatch(released);
    const digest = released.exec(log)![1]!;
    const manifest = (login?: string) =>
      fetch(`http://${platform.host}/v2/berth/${app.uuid}/manifests/${digest}`, {
        headers: {
          Accept: 'application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json',
          ...(login ? { Authorization: `Basic ${Buffer.from(login).toString('base64')}` } : {}),
        },
      }).then((r) => r.status);
    expect(await manifest(`berth:${platform.password}`)).toBe(200);
    expect(await manifest()).toBe(401);
    await eventually(async () => (await api.get(`/api/v1/apps/${app.uuid}`).set(auth)).body.state === 'running', {
      what: 'running',
      timeoutMs: 60_000,
    });
    const res = await berth.viaPublicUrl(app.public_url).expect(200);
    expect(res.text).toBe(TEST_IMAGE_PAGE);
    expect(berth.output()).not.toContain(registry.password);
    // one container, of the pinned image, as the app's replica; a stop removes it, a start runs a new one
    const [container] = containersOf(app.uuid);
    expect(containersOf(app.uuid)).toHaveLength(1);
    // with the workload network (nftables and iproute2 here), the container is in a namespace of its own, not the machine's
    if (existsSync('/usr/sbin/nft') && existsSync('/usr/sbin/ip')) {
      const pid = podman(['inspect', '--format', '{{.State.Pid}}', container!.split(' ')[0]!]).trim();
      expect(readlinkSync(`/proc/${pid}/ns/net`)).not.toBe(readlinkSync('/proc/self/ns/net'));
    }
    expect(container).toMatch(
      new RegExp(
        `^berth-${app.uuid}-image-[0-9a-f]{12}-[0-9a-f]{6}-web1-1 ${platform.host}/berth/${app.uuid}@${digest}$`,
      ),
    );
    await api.patch(`/api/v1/apps/${app.uuid}/state`).set(auth).send({ action: 'stop' }).expect(202);
    await eventually(async () => (await api.get(`/api/v1/apps/${app.uuid}`).set(auth)).body.state === 'stopped', {
      what: 'stopped',
    });
    await eventually(async () => containersOf(app.uuid).length === 0, { what: 'the container removed' });
    expect((await berth.viaPublicUrl(app.public_url)).status).toBe(503);
    await api.patch(`/api/v1/apps/${app.uuid}/state`).set(auth).send({ action: 'start' }).expect(202);
    await eventually(async () => (await berth.viaPublicUrl(app.public_url)).status === 200, {
      what: 'served again',
      timeoutMs: 60_000,
    });
    expect(containersOf(app.uuid)).toHaveLength(1);
  });

  const networked = existsSync('/usr/sbin/nft') && existsSync('/usr/sbin/ip');
  (networked ? it : it.skip)(
    "tenant escape from an image app: inside its container, loopback is its own and the platform's ports are out of reach",
    async () => {
      const { app } = await deployImage('escaping', await credential('escape', registry.password));
      await eventually(async () => (await berth.viaPublicUrl(app.public_url)).status === 200, {
        what: 'the image app serving',
        timeoutMs: 60_000,
      });
      const [container] = containersOf(app.uuid);
      const pid = podman(['inspect', '--format', '{{.State.Pid}}', container!.split(' ')[0]!]).trim();
      const gateway = /Network\s+each workload in a network namespace of its own, (\S+) its gateway/.exec(
        berth.output(),
      )![1]!;
      /** Whether a TCP connection from inside the container (its network and files: busybox nc, 1 s) opens. */
      const opens = (host: string, port: string | number) => {
        try {
          execFileSync(
            'nsenter',
            [
              '-t',
              pid,
              '-n',
              '-m',
              '--',
              '/bin/busybox',
              'nc',
              '-w',
              '1',
              host,
              String(port),
              '-e',
              '/bin/busybox',
              'true',
            ],
            {
              stdio: 'ignore',
            },
          );
          return true;
        } catch {
          return false;
        }
      };
      // its resolver is the workload network's, at the gateway
      const resolvConf = execFileSync('nsenter', ['-t', pid, '-m', '--', '/bin/busybox', 'cat', '/etc/resolv.conf'], {
        encoding: 'utf8',
      });
      expect(resolvConf).toContain(`nameserver ${gateway}`);
      // its own server, on its own loopback at internal_url's port: open
      expect(opens('127.0.0.1', (app.internal_url as string).split(':')[1]!)).toBe(true);
      for (const key of ['PORT', 'BERTH_TEMPORAL_PORT', 'BERTH_PG_PORT', 'BERTH_INGRESS_PORT']) {
        const port = berth.env[key]!;
        expect({ key, loopback: opens('127.0.0.1', port), gateway: opens(gateway, port) }).toEqual({
          key,
          loopback: false,
          gateway: false,
        });
      }
    },
  );

  it("a parent_image app runs the parent's release: the same pinned image; with parent_image_auto_sync it follows the parent's next release", async () => {
    const parent = (await api.get('/api/v1/apps').set(auth).expect(200)).body.find((a: any) =>
      a.name.startsWith('imaged'),
    );
    // a clone that runs its parent's image and follows it (CLN-02's flags)
    const cloned = await api
      .post(`/api/v1/apps/${parent.uuid}/clone`)
      .set(auth)
      .send({ name: 'imagechild', resource_id: resource, use_parent_image: true, parent_image_auto_sync: true });
    expect([cloned.status, cloned.body.detail]).toEqual([201, undefined]);
    const child = cloned.body;
    await eventually(async () => (await berth.viaPublicUrl(child.public_url)).status === 200, {
      what: 'the child served',
      timeoutMs: 60_000,
    });
    expect((await berth.viaPublicUrl(child.public_url)).text).toBe(TEST_IMAGE_PAGE);
    const imageOf = (row: string) => row.split(' ')[1];
    expect(containersOf(child.uuid).map(imageOf)).toEqual(containersOf(parent.uuid).map(imageOf));

    // the parent's tag moves to a new image and the parent deploys it: the child follows by itself
    const page = 'the next release of the parent\n';
    pushTestImage(registry, 'acme/hello:1', page);
    expect((await deployed(parent.uuid)).state).toBe('completed');
    await eventually(async () => (await berth.viaPublicUrl(child.public_url)).text === page, {
      what: "the child serving the parent's next release",
      timeoutMs: 120_000,
    });
    const [parentImage] = containersOf(parent.uuid).map(imageOf);
    expect(containersOf(child.uuid).map(imageOf)).toEqual([parentImage]);
    // the follow is a deployment of the child's own, by the parent_image method
    await eventually(
      async () => {
        const list = (await api.get(`/api/v1/apps/${child.uuid}/deployments`).set(auth).expect(200)).body;
        return list.length === 1 && list[0].deployment_method === 'parent_image' && list[0].state === 'completed';
      },
      { what: "the child's follow-up deployment completed", timeoutMs: 60_000 },
    );
  });

  it('an image the registry does not have fails the deployment with its reason', async () => {
    const { deployment } = await deployImage(
      'noimage',
      await credential('good2', registry.password),
      `${registry.host}/acme/absent:1`,
    );
    expect(deployment.state).toBe('failed');
    expect(deployment.message).toMatch(/manifest unknown/);
  });

  it("a registry on the platform's own network is refused (the machine's ports are not a tenant's to probe), unless the operator allows its range", async () => {
    const noimage = (await api.get('/api/v1/apps').set(auth).expect(200)).body.find((a: any) =>
      a.name.startsWith('noimage'),
    );
    // 127.0.0.1 is allowed for the test registries; 127.0.0.2 is not: Berth's API answers there
    const apiPort = new URL(berth.apiUrl).port;
    await api
      .put(`/api/v1/apps/${noimage.uuid}/deployment`)
      .set(auth)
      .send({
        deployment_method: 'container_registry',
        deployment_config: {
          image: `127.0.0.2:${apiPort}/acme/hello:1`,
          credential_id: noimage.deployment_config.credential_id,
        },
      })
      .expect(200);
    const deployment = await deployed(noimage.uuid);
    expect(deployment.state).toBe('failed');
    expect(deployment.message).toMatch(
      new RegExp(
        `public registries only, and 127\\.0\\.0\\.2:${apiPort} is not one \\(127\\.0\\.0\\.2 is in loopback space\\).*BERTH_REGISTRY_ALLOW_CIDRS`,
      ),
    );
    // nothing reached the API: the refusal came before any pull
    expect(await buildLog(noimage.uuid, deployment.uuid)).not.toMatch(/pulling/);
  });

  it("an image whose USER is not root runs as that user, an id of the app's own range (its root is the range's first)", async () => {
    const noimage = (await api.get('/api/v1/apps').set(auth).expect(200)).body.find((a: any) =>
      a.name.startsWith('noimage'),
    );
    const ref = pushTestImage(registry, 'acme/as-user:1', 'served by uid 1000\n', { user: 1000 });
    await api
      .put(`/api/v1/apps/${noimage.uuid}/deployment`)
      .set(auth)
      .send({
        deployment_method: 'container_registry',
        deployment_config: { image: ref, credential_id: noimage.deployment_config.credential_id },
      })
      .expect(200);
    expect((await deployed(noimage.uuid)).state).toBe('completed');
    await eventually(async () => (await berth.viaPublicUrl(noimage.public_url, '/uid')).text === '1000\n', {
      what: 'the image user serving its uid',
      timeoutMs: 60_000,
    });
    // on the machine: the container's process is the app's range's id 1000, not root, not another app's
    const [container] = containersOf(noimage.uuid);
    const pid = podman(['inspect', '--format', '{{.State.Pid}}', container!.split(' ')[0]!]).trim();
    const uids = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1];
    expect(Number(uids)).toBe(appIdBase(noimage.uuid) + 1000);
  });

  it('with a wrong credential the deployment fails with the registry reason, and the secret is nowhere', async () => {
    const wrong = `wrong-${registry.password}-token`;
    const { app, deployment } = await deployImage('badlogin', await credential('bad', wrong));
    expect(deployment.state).toBe('failed');
    expect(deployment.message).toMatch(/unauthorized: authentication required/);
    const log = await buildLog(app.uuid, deployment.uuid);
    expect(log).toMatch(/unauthorized/);
    const answers = [
      JSON.stringify(deployment),
      log,
      JSON.stringify((await api.get(`/api/v1/apps/${app.uuid}`).set(auth)).body),
      JSON.stringify((await api.get(`/api/v1/apps/${app.uuid}/deployments`).set(auth)).body),
      JSON.stringify((await api.get('/api/v1/container_registry_credentials').set(auth)).body),
      berth.output(),
    ];
    const b64 = Buffer.from(`${registry.username}:${wrong}`).toString('base64');
    for (const text of answers) {
      expect(text).not.toContain(wrong);
      expect(text).not.toContain(b64);
    }
  });

  let dockered: any;

  it("a Dockerfile app deployed by git push is built in namespaces of its own (the platform's ports out of reach of its RUN steps), serves through the ingress, and its build output is in the push and the deployment log", async () => {
    const app = (dockered = (
      await api
        .post('/api/v1/apps')
        .set(auth)
        .send({ name: 'dockered', resource_id: resource, deployment_method: 'git_push', builder: 'dockerfile' })
        .expect(201)
    ).body);
    const gateway = /Network\s+each workload in a network namespace of its own, (\S+) its gateway/.exec(
      berth.output(),
    )?.[1];
    const hosts = ['127.0.0.1', ...(gateway ? [gateway] : [])];
    const ports = ['PORT', 'BERTH_TEMPORAL_PORT', 'BERTH_PG_PORT', 'BERTH_INGRESS_PORT'].map((k) => berth.env[k]);
    const probe = `for h in ${hosts.join(' ')}; do for p in ${ports.join(' ')}; do if nc -w 1 $h $p -e true; then echo "probe reached $h:$p"; else echo "probe closed $h:$p"; fi; done; done`;
    const page = 'built here from a Dockerfile\n';
    const repo = localRepo({ 'www/index.html': page });
    try {
      addBusybox(repo.dir);
      repo.commit({ Dockerfile: busyboxDockerfile([probe]) });
      const out = berth.push(repo.dir, app.git_url);
      expect(out).toMatch(/remote: .*STEP 1\/\d+: FROM scratch/);
      expect(out).toMatch(new RegExp(`remote: deployed: ${app.public_url}`));
      const [deployment] = (await api.get(`/api/v1/apps/${app.uuid}/deployments`).set(auth).expect(200)).body;
      expect(deployment.state).toBe('completed');
      const log = await buildLog(app.uuid, deployment.uuid);
      expect(log).toContain('$ podman build --file Dockerfile .');
      const platform = platformRegistry();
      expect(log).toMatch(new RegExp(`runs ${platform.host}/berth/${app.uuid}@sha256:[0-9a-f]{64}`));
      // with the workload network, every platform port is closed to the build, on loopback and at the gateway
      if (gateway) {
        expect(log.match(/probe closed [0-9]/g)).toHaveLength(hosts.length * ports.length);
        expect(log).not.toMatch(/probe reached [0-9]/);
      }
      await eventually(async () => (await berth.viaPublicUrl(app.public_url)).status === 200, {
        what: 'the Dockerfile app served',
        timeoutMs: 60_000,
      });
      expect((await berth.viaPublicUrl(app.public_url)).text).toBe(page);
      expect(containersOf(app.uuid)).toEqual([
        expect.stringMatching(new RegExp(` ${platform.host}/berth/${app.uuid}@sha256:[0-9a-f]{64}$`)),
      ]);
    } finally {
      repo.dispose();
    }
  });

  /** One Dockerfile app (the resource's quota has room for few more) and its working copy, for the FROM cases. */
  let fromApp: { app: any; repo: ReturnType<typeof localRepo> } | null = null;
  afterAll(() => fromApp?.repo.dispose());

  /** A git push of `FROM <base>` with a page of its own to the FROM cases' app: the app, the push output, its deployment and log. */
  async function pushFromBase(base: string, page: string) {
    if (!fromApp) {
      const created = await api
        .post('/api/v1/apps')
        .set(auth)
        .send({ name: 'fromprivate', resource_id: resource, deployment_method: 'git_push', builder: 'dockerfile' });
      expect([created.status, created.body.detail]).toEqual([201, undefined]);
      fromApp = { app: created.body, repo: localRepo({ 'www/index.html': 'none yet\n' }) };
    }
    const { app, repo } = fromApp;
    repo.commit({ 'www/index.html': page, Dockerfile: `FROM ${base}\nCOPY www /www\n` });
    const out = berth.push(repo.dir, app.git_url);
    const [deployment] = (await api.get(`/api/v1/apps/${app.uuid}/deployments`).set(auth).expect(200)).body;
    return { app, out, deployment, log: await buildLog(app.uuid, deployment.uuid) };
  }

  /** The auth files a Dockerfile build of the app left in its build space (none: each is removed with its build). */
  function leftAuthFiles(appUuid: string): string[] {
    const home = path.join(systemAppsDir(berth.dataDir), 'image-builds', appUuid, 'home');
    expect(existsSync(home)).toBe(true);
    return readdirSync(home).filter((f) => f.startsWith('auth'));
  }

  it("a Dockerfile whose FROM is a private image builds with the workspace's credential for that registry; a wrong one fails the build with the registry's reason, and its token is nowhere", async () => {
    // the newest credential of a registry is the one a build uses: the wrong one first, then the right one (the same app, pushed again)
    const wrong = `wrong-${registry.password}-from`;
    await credential('from-wrong', wrong);
    const failed = await pushFromBase(image, 'never served\n');
    expect(failed.deployment.state).toBe('failed');
    expect(failed.deployment.message).toMatch(/podman pull.*unauthorized: authentication required/);
    expect(failed.log).toContain(`$ podman pull ${image} (with the workspace's credential for ${registry.host})`);
    expect(failed.out).toMatch(/remote: .*unauthorized/);
    const b64 = Buffer.from(`${registry.username}:${wrong}`).toString('base64');
    for (const text of [failed.out, failed.log, JSON.stringify(failed.deployment), berth.output()]) {
      expect(text).not.toContain(wrong);
      expect(text).not.toContain(b64);
    }
    expect(leftAuthFiles(failed.app.uuid)).toEqual([]);

    await credential('from-good', registry.password);
    const page = 'built FROM a private base image\n';
    const built = await pushFromBase(image, page);
    expect([built.deployment.state, built.deployment.message, built.log]).toEqual([
      'completed',
      null,
      expect.anything(),
    ]);
    expect(built.out).toMatch(new RegExp(`remote: deployed: ${built.app.public_url}`));
    expect(built.log).toContain(`$ podman pull ${image}`);
    expect(built.log).toMatch(/STEP 1\/2: FROM /);
    await eventually(async () => (await berth.viaPublicUrl(built.app.public_url)).status === 200, {
      what: 'the app built FROM a private image served',
      timeoutMs: 60_000,
    });
    expect((await berth.viaPublicUrl(built.app.public_url)).text).toBe(page);
    expect(leftAuthFiles(built.app.uuid)).toEqual([]);
    for (const text of [built.out, built.log, berth.output()]) expect(text).not.toContain(registry.password);
  });

  it('a Dockerfile whose FROM is on a registry the workspace has no credential for fails its build, naming the image', async () => {
    const other = await startTestRegistry('other', `pw-other-${Math.random().toString(36).slice(2)}`);
    try {
      const base = pushTestImage(other);
      const { deployment, log } = await pushFromBase(base, 'never served\n');
      expect(deployment.state).toBe('failed');
      // podman's reason: the registry, on the machine's loopback, is not reachable from the build's own network
      expect(deployment.message).toMatch(/^podman build exited .*: /);
      expect(deployment.message).toContain(other.host);
      expect(log).toContain(base);
      expect(log).not.toContain('$ podman pull');
    } finally {
      await other.stop();
    }
  });

  it('an image app over its memory quota is killed, and its log says it ran out of memory', async () => {
    const quotaMb = Math.round(dockered.quota.ram_size / 2 ** 20);
    await api
      .put(`/api/v1/apps/${dockered.uuid}/variables`)
      .set(auth)
      .send({ variables: [{ key: 'ALLOC_MB', value: String(quotaMb * 2) }] })
      .expect(200);
    await api.patch(`/api/v1/apps/${dockered.uuid}/state`).set(auth).send({ action: 'restart' }).expect(202);
    await eventually(
      async () => {
        const logs = (await api.get(`/api/v1/apps/${dockered.uuid}/logs`).query({ tail: 200 }).set(auth).expect(200))
          .body;
        return logs.some((l: any) =>
          new RegExp(`was killed: exceeded its ram quota of ${quotaMb} MiB`).test(l.message),
        );
      },
      { what: 'the OOM kill in the app log', timeoutMs: 60_000 },
    );
    // conmon's out-of-memory marker stays in podman's folder, not in Berth's working directory
    expect(existsSync(path.join(ROOT, 'oom'))).toBe(false);
  });

  it("a stack runs its image: service as a container (pulled from a registry, pushed to the platform's), builds its build: service's Dockerfile (FROM a private image, with the workspace's credential), mounts its named volume in both and runs its managed postgres; it reaches running, everything answers, and deleting it removes the volume", async () => {
    const open = await startTestRegistry(undefined, undefined, { open: true });
    const webPage = 'a stack service built from its Dockerfile\n';
    // the built service (FROM the private test image), at each start: a line in the shared volume, and postgres's answer to
    // an SSLRequest (N or S) at its DATABASE_URL, both served over HTTP
    const boot = [
      'echo booted >> /www/shared/boots',
      'hp=${DATABASE_URL#*@}; hp=${hp%%/*}',
      "printf '\\000\\000\\000\\010\\004\\322\\026\\057' | nc -w 5 ${hp%:*} ${hp##*:} > /www/db-answer",
    ].join('; ');
    const source = localRepo({
      'compose.yaml': [
        'services:',
        '  hello:',
        `    image: ${pushTestImage(open)}`,
        '    ports: ["8080"]',
        '    volumes: ["shared:/www/shared"]',
        '  web:',
        '    build: ./web',
        '    ports: ["8080"]',
        '    volumes:',
        '      - type: volume',
        '        source: shared',
        '        target: /www/shared',
        '  db:',
        '    image: postgres:16',
        'volumes:',
        '  shared: {}',
        '',
      ].join('\n'),
      'web/www/index.html': webPage,
    });
    const volumesDir = path.join(/App files\s+(\S+)/.exec(berth.output())![1]!, 'volumes');
    const stackVolumes = () => readdirSync(volumesDir).filter((f) => f.startsWith('sv-'));
    try {
      // the built service's base is a private image: built with the workspace's credential for its registry
      await credential('stack-base', registry.password);
      source.commit({
        'web/Dockerfile': [
          `FROM ${image}`,
          'COPY www /www',
          `CMD ${JSON.stringify(['/bin/busybox', 'sh', '-c', `${boot}; exec /bin/busybox httpd -f -p $PORT -h /www`])}`,
          '',
        ].join('\n'),
      });
      const stack = await deployStack(
        api,
        auth,
        { name: 'imaged-stack', resource_id: resource, repository_url: source.url },
        240_000,
      );
      expect(stack.latest_deployment).toMatchObject({ state: 'completed', validation_errors: {} });
      expect(stack.state).toBe('running');
      expect(stack.services.find((s: any) => s.compose_service_name === 'db')).toMatchObject({
        item_type: 'addon',
        compose_service_type: 'postgres',
        status: 'running',
      });
      const platform = platformRegistry();
      const appOf = async (name: string) => {
        const service = stack.services.find((s: any) => s.compose_service_name === name);
        return (await api.get(`/api/v1/apps/${service.item_uuid}`).set(auth).expect(200)).body;
      };
      const [hello, web] = [await appOf('hello'), await appOf('web')];
      const page = async (app: any, file: string) => {
        const r = await berth.viaPublicUrl(app.public_url, file);
        return r.status === 200 ? r.text : `${r.status}`;
      };
      for (const [app, want] of [
        [hello, TEST_IMAGE_PAGE],
        [web, webPage],
      ] as const) {
        await eventually(async () => (await page(app, '/')) === want, {
          what: `the stack's ${app.name} service answering`,
          timeoutMs: 60_000,
        });
        // each runs as a container of its image, from the platform registry
        expect(containersOf(app.uuid)).toEqual([
          expect.stringMatching(new RegExp(` ${platform.host}/berth/${app.uuid}@sha256:[0-9a-f]{64}$`)),
        ]);
      }
      // what the built service wrote in the named volume, the image service (another uid) serves
      expect(await page(hello, '/shared/boots')).toBe('booted\n');
      // the managed postgres answered the built service at its DATABASE_URL
      expect(await page(web, '/db-answer')).toMatch(/^[NS]$/);
      expect(stackVolumes()).toHaveLength(1);

      await api.delete(`/api/v1/stacks/${stack.uuid}`).set(auth).expect(204);
      await eventually(async () => stackVolumes().length === 0 && containersOf(web.uuid).length === 0, {
        what: "the stack's volume and containers gone",
        timeoutMs: 60_000,
      });
    } finally {
      source.dispose();
      await open.stop();
    }
  });

  it('stopping Berth leaves no container running and nothing mounted under its data directory', async () => {
    const apps = (await api.get('/api/v1/apps').set(auth).expect(200)).body;
    expect(apps.flatMap((a: any) => containersOf(a.uuid)).length).toBeGreaterThan(0);
    const dataDir = berth.dataDir;
    const confDir = path.join(dataDir, 'local', 'podman');
    await berth.stop();
    const mounts = execFileSync('mount', { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.includes(`${dataDir}/`));
    expect(mounts).toEqual([]);
    const processes = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' });
    expect(processes).not.toContain(confDir);
    // the embedded platform registry ends with Berth
    expect(processes).not.toContain(path.join(dataDir, 'local', 'registry'));
  });
});
