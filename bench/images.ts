/**
 * `npm run bench:images`: how long an image app takes from create to serving on the local
 * driver (issue 27), beside a process app in the same run. `berth dev` as a user runs it;
 * each round creates, deploys and waits until the app's public URL answers 200 through the
 * ingress, for:
 *   - an image app: `container_registry`, the test image (FROM scratch, busybox httpd)
 *     pulled with a credential from a registry on loopback, run with podman;
 *   - a process app (the baseline): `git_push` of a Procfile app serving the same page with
 *     the same busybox httpd, built and run as processes.
 * Rounds alternate the two; prints both medians and the ratio image/process.
 *
 * Needs root, podman, docker-registry, htpasswd and busybox-static (as the image tests).
 * Options (env): BENCH_N (rounds, default 10).
 */
import request from 'supertest';
import { DEPLOYABLE_STATES } from '../domain/apps';
import { startBerthDev, type BerthDev } from '../test/e2e/support/berth-dev';
import { localRepo } from '../test/support/git';
import globalSetup from '../test/support/global-setup';
import globalTeardown from '../test/support/global-teardown';
import { imageTestsMissing, pushTestImage, startTestRegistry, TEST_IMAGE_PAGE } from '../test/support/images';

const N = Number(process.env.BENCH_N ?? 10);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** Polls `check` every 100 ms for at most `ms`; throws with `what` when it never holds. */
async function until(what: string, check: () => Promise<boolean>, ms = 120_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main(): Promise<void> {
  const missing = imageTestsMissing();
  if (missing) throw new Error(`bench:images cannot run here: ${missing}`);
  await globalSetup(); // the tools `berth dev` is started with (the Temporal CLI)
  const registry = await startTestRegistry();
  const image = pushTestImage(registry);
  let berth: BerthDev | null = null;
  const repo = localRepo({
    Procfile: 'web: exec /bin/busybox httpd -f -p $PORT -h www\n',
    'www/index.html': TEST_IMAGE_PAGE,
  });
  try {
    // the test registry is on loopback: the operator's allow-list lets it through (registry-reach.ts)
    berth = await startBerthDev({ BERTH_REGISTRY_ALLOW_CIDRS: '127.0.0.1/32' });
    const dev = berth;
    const api = request(dev.apiUrl);
    const auth = { Authorization: `Bearer ${dev.token}` };
    const resource = (await api.get('/api/v1/resources').set(auth).expect(200)).body[0].uuid;
    const credential = (
      await api
        .post('/api/v1/container_registry_credentials')
        .set(auth)
        .send({
          name: 'bench',
          registry: 'generic',
          registry_hostname: registry.host,
          username: registry.username,
          token: registry.password,
        })
        .expect(201)
    ).body.uuid;
    const serving = async (publicUrl: string) => {
      const res = await dev.viaPublicUrl(publicUrl).catch(() => null);
      return res?.status === 200 && res.text === TEST_IMAGE_PAGE;
    };
    const deployable = async (uuid: string) =>
      DEPLOYABLE_STATES.includes((await api.get(`/api/v1/apps/${uuid}`).set(auth)).body.state);

    /** create -> serving of an image app, in milliseconds. */
    const imageRound = async (i: number): Promise<number> => {
      const t0 = performance.now();
      const app = (
        await api
          .post('/api/v1/apps')
          .set(auth)
          .send({
            name: `img${i}`,
            resource_id: resource,
            deployment_method: 'container_registry',
            deployment_config: { image, credential_id: credential },
          })
          .expect(201)
      ).body;
      await until('the image app deployable', () => deployable(app.uuid));
      await api.post(`/api/v1/apps/${app.uuid}/deployments`).set(auth).send({}).expect(202);
      await until('the image app serving', () => serving(app.public_url));
      const took = performance.now() - t0;
      await api.delete(`/api/v1/apps/${app.uuid}`).set(auth);
      return took;
    };

    /** create -> serving of a process app (git push of the Procfile app), in milliseconds. */
    const processRound = async (i: number): Promise<number> => {
      const t0 = performance.now();
      const app = (
        await api
          .post('/api/v1/apps')
          .set(auth)
          .send({ name: `proc${i}`, resource_id: resource, deployment_method: 'git_push' })
          .expect(201)
      ).body;
      const out = dev.push(repo.dir, app.git_url);
      if (!/deployed: /.test(out)) throw new Error(`the process app's push did not deploy:\n${out}`);
      await until('the process app serving', () => serving(app.public_url));
      const took = performance.now() - t0;
      await api.delete(`/api/v1/apps/${app.uuid}`).set(auth);
      return took;
    };

    // one of each first, not counted: podman's storage and the git repository warm up
    await imageRound(0);
    await processRound(0);
    const images: number[] = [];
    const processes: number[] = [];
    for (let i = 1; i <= N; i++) {
      images.push(await imageRound(i));
      processes.push(await processRound(i));
    }
    const ratio = median(images) / median(processes);
    console.log(`local driver, create -> serving through the ingress, ${N} rounds each, alternating`);
    console.log(`  image app (container_registry, podman)  median ${secs(median(images))}`);
    console.log(`  process app (git push, Procfile)        median ${secs(median(processes))}`);
    console.log(`  ratio image/process ${ratio.toFixed(2)}`);
  } finally {
    await berth?.stop();
    await registry.stop();
    repo.dispose();
    await globalTeardown();
  }
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
