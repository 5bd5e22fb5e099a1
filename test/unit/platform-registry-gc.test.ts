import { readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openPlatformRegistry } from '../../activities/provider/local/images/registry';
import { createLogger } from '../../platform/logger';
import { imageTestsMissing, pushTestImage } from '../support/images';

/**
 * Issue 27, disk: the embedded platform registry's garbage collection. Pruning deletes a
 * release's manifest from the registry (images/prune.ts); the blobs only that manifest
 * named are freed by `docker-registry garbage-collect`, which Berth runs before the
 * registry serves. A manifest still there keeps its blobs.
 */
jest.setTimeout(120_000);

const missing = imageTestsMissing();
const describeRegistry = missing ? describe.skip : describe;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'berth-registry-gc-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The registry's blobs on disk (sha256 digests). */
function blobs(): string[] {
  const root = path.join(dir, 'data', 'docker', 'registry', 'v2', 'blobs', 'sha256');
  return readdirSync(root).flatMap((prefix) => readdirSync(path.join(root, prefix)));
}

describeRegistry('the embedded registry frees what no manifest names', () => {
  it("a deleted release's blobs are gone after the next start; a kept image's stay", async () => {
    const logger = createLogger('silent');
    const open = async () => (await openPlatformRegistry({ kind: 'embedded' }, dir, logger)).registry!;
    let registry = await open();
    const login = {
      host: registry.host,
      username: 'berth',
      password: readFileSync(path.join(dir, 'password'), 'utf8'),
    };
    pushTestImage({ ...login, stop: async () => {} }, 'berth/kept:1');
    pushTestImage({ ...login, stop: async () => {} }, 'berth/pruned:1', 'a release that is pruned\n');
    const auth = `Basic ${Buffer.from(`${login.username}:${login.password}`).toString('base64')}`;
    const manifest = async (name: string, method: 'HEAD' | 'DELETE', ref: string) =>
      fetch(`http://${registry.host}/v2/${name}/manifests/${ref}`, {
        method,
        headers: {
          Authorization: auth,
          Accept: 'application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json',
        },
      });
    const digest = (await manifest('berth/pruned', 'HEAD', '1')).headers.get('docker-content-digest')!;
    expect(digest).toMatch(/^sha256:/);
    const before = blobs();

    // what image pruning does to a release it drops, then a restart
    expect((await manifest('berth/pruned', 'DELETE', digest)).status).toBe(202);
    await registry.close();
    registry = await open();
    try {
      const after = blobs();
      expect(after.length).toBeLessThan(before.length);
      // the pruned image's own layer and config are gone; the kept image still pulls whole
      expect((await manifest('berth/kept', 'HEAD', '1')).status).toBe(200);
      expect(after.every((b) => before.includes(b))).toBe(true);
      const kept = await fetch(`http://${registry.host}/v2/berth/kept/manifests/1`, {
        headers: {
          Authorization: auth,
          Accept: 'application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json',
        },
      }).then((r) => r.json() as Promise<{ config: { digest: string }; layers: { digest: string }[] }>);
      for (const d of [kept.config.digest, ...kept.layers.map((l) => l.digest)])
        expect(after).toContain(d.replace('sha256:', ''));
    } finally {
      await registry.close();
    }
  });
});
