import { mkdtemp, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Isolation } from '../sandbox/isolation';
import type { PodmanConfig } from './config';
import { podmanReason, runPodman } from './podman';
import { isLoopbackRegistry, parseImageReference, pinnedImage } from './reference';
import type { PlatformRegistry } from './registry';

export type PublishResult = { ok: true; image: string; digest: string } | { ok: false; reason: string };

/**
 * Pushes an image of podman's storage (`from`) to the platform registry as
 * `<registry>/berth/<app>:<tag>`, then pulls it back by the digest the registry gave it, so
 * podman's storage knows the image by the name releases run (`<registry>/berth/<app>@sha256:...`,
 * `--pull never`). Answers that pinned name.
 */
export async function publishImage(
  iso: Isolation,
  cfg: PodmanConfig,
  registry: PlatformRegistry,
  input: { from: string; appUuid: string; tag: string; onLine?: (line: string) => void },
): Promise<PublishResult> {
  const target = `${registry.host}/berth/${input.appUuid}:${input.tag}`;
  const login = registry.authFile ? ['--authfile', registry.authFile] : [];
  const tls = isLoopbackRegistry(registry.host) ? ['--tls-verify=false'] : [];
  const dir = await mkdtemp(path.join(cfg.scratchDir, 'push-'));
  try {
    const tagged = await runPodman(iso, cfg, ['tag', input.from, target]);
    if (tagged.code !== 0) return { ok: false, reason: `could not tag ${input.from}: ${podmanReason(tagged)}` };
    const digestFile = path.join(dir, 'digest');
    input.onLine?.(`pushing to the platform registry: ${target}`);
    const pushed = await runPodman(iso, cfg, ['push', '--quiet', ...login, ...tls, '--digestfile', digestFile, target]);
    if (pushed.code !== 0)
      return { ok: false, reason: `could not push to the platform registry ${registry.host}: ${podmanReason(pushed)}` };
    const digest = (await readFile(digestFile, 'utf8')).trim();
    const image = pinnedImage(parseImageReference(target), digest);
    const pulled = await runPodman(iso, cfg, ['pull', '--quiet', ...login, ...tls, image]);
    if (pulled.code !== 0)
      return { ok: false, reason: `could not pull ${image} back from the platform registry: ${podmanReason(pulled)}` };
    input.onLine?.(`pushed ${image}`);
    return { ok: true, image, digest };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
