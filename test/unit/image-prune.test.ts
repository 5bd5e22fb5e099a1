import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ensurePodmanConfig, podmanConfig } from '../../activities/provider/local/images/config';
import { podmanEnv } from '../../activities/provider/local/images/podman';
import { KEPT_IMAGE_RELEASES, pruneImageReleases } from '../../activities/provider/local/images/prune';
import { imageReleaseManifest, type ReleaseManifest } from '../../activities/provider/local/contracts';
import { detectIsolation } from '../../activities/provider/local/sandbox/isolation';
import { localLayout, type LocalLayout } from '../../platform/local-layout';
import { imageTestsMissing } from '../support/images';

/**
 * Issue 27, disk: an app's old image releases are pruned with their images, keeping the
 * serving release and the most recent ones (what a rollback needs), and never an image
 * another app's release still names (a parent_image clone runs its parent's image).
 */
jest.setTimeout(120_000);

const missing = imageTestsMissing();
const describePrune = missing ? describe.skip : describe;

let base: string;
let layout: LocalLayout;

beforeAll(() => {
  base = mkdtempSync(path.join(tmpdir(), 'berth-prune-'));
  layout = localLayout({ dataDir: path.join(base, 'data'), appsDir: path.join(base, 'apps') });
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

describePrune('pruning image releases', () => {
  it(`keeps the serving release and the ${KEPT_IMAGE_RELEASES} most recent others; an older one goes with its image, unless a clone's release names it`, async () => {
    const podman = podmanConfig(layout);
    ensurePodmanConfig(podman);
    const env = { ...process.env, ...podmanEnv(podman) };
    const podmanSays = (args: string[]) => execFileSync('podman', args, { env, encoding: 'utf8' }).trim();
    const exists = (image: string) => {
      try {
        podmanSays(['image', 'exists', image]);
        return true;
      } catch {
        return false;
      }
    };
    // six images of app A (a file of their own each), one release each, r1 the oldest
    const ctx = path.join(base, 'ctx');
    mkdirSync(ctx, { recursive: true });
    writeFileSync(path.join(ctx, 'Containerfile'), 'FROM scratch\nCOPY n /n\n');
    const app = randomUUID();
    const clone = randomUUID();
    const images: string[] = [];
    for (let n = 1; n <= 6; n++) {
      writeFileSync(path.join(ctx, 'n'), String(n));
      const image = `localhost/prune-test/${n}:1`;
      podmanSays(['build', '--quiet', '-t', image, ctx]);
      images.push(image);
    }
    const release = (appUuid: string, n: number): ReleaseManifest =>
      imageReleaseManifest({
        releaseId: `r${n}`,
        appUuid,
        commitSha: null,
        stack: 'image',
        image: images[n - 1]!,
        builtAt: new Date(Date.UTC(2026, 10, 1, n)),
      });
    const write = (m: ReleaseManifest) => {
      mkdirSync(layout.releaseDir(m.appUuid, m.releaseId), { recursive: true });
      writeFileSync(layout.releaseManifest(m.appUuid, m.releaseId), JSON.stringify(m));
    };
    for (let n = 1; n <= 6; n++) write(release(app, n));
    // the clone's release names r2's image
    write({ ...release(clone, 2), releaseId: 'copy-of-r2' });

    // r1 serves (a rollback to it); r6, r5, r4 are the most recent others
    const pruned = await pruneImageReleases({ layout, isolation: detectIsolation(), podman, registry: null }, app, [
      'r1',
    ]);
    expect(pruned.sort()).toEqual(['r2', 'r3']);
    for (const n of [2, 3]) expect(existsSync(layout.releaseManifest(app, `r${n}`))).toBe(false);
    for (const n of [1, 4, 5, 6]) expect(existsSync(layout.releaseManifest(app, `r${n}`))).toBe(true);
    // r3's image is gone; r2's stays for the clone; the kept releases' stay
    expect(images.map(exists)).toEqual([true, true, false, true, true, true]);
  });
});
