import type { PullLogin } from '../../../../platform/drivers/apps';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Isolation } from '../sandbox/isolation';
import type { PodmanConfig } from './config';
import { loginSecrets } from './base-images';
import { podmanReason, runPodman } from './podman';
import { isLoopbackRegistry, parseImageReference, pinnedImage, qualifiedImage } from './reference';

export type PullResult = { ok: true; image: string; digest: string } | { ok: false; reason: string };

/** How long a pull may take. */
const PULL_TIME_LIMIT_MS = 15 * 60_000;

/** `text` with the login's secret (and its base64 form in an auth file) replaced by ***. */
export function withoutSecret(text: string, auth: PullLogin | null): string {
  if (!auth) return text;
  return loginSecrets(auth).reduce((t, s) => t.split(s).join('***'), text);
}

/**
 * Pulls `image` with the login: the login is written to an auth file (0600) in a private
 * temporary folder of Berth's, handed to podman by path and removed afterwards; it is never
 * on a command line, in a log line or in the reason. Without a login podman still gets an
 * (empty) auth file of its own: it never falls back to the machine's root logins. Answers
 * the reference pinned to the pulled manifest's digest, or the registry's reason.
 */
export async function pullImage(
  iso: Isolation,
  cfg: PodmanConfig,
  input: { image: string; auth: PullLogin | null; onLine?: (line: string) => void },
): Promise<PullResult> {
  const ref = parseImageReference(input.image);
  const qualified = qualifiedImage(ref);
  const { auth } = input;
  const say = (line: string) => input.onLine?.(withoutSecret(line, auth));
  const dir = await mkdtemp(path.join(cfg.scratchDir, 'pull-'));
  try {
    const authFile = path.join(dir, 'auth.json');
    const auths = auth
      ? { [auth.server || ref.registry]: { auth: Buffer.from(`${auth.username}:${auth.token}`).toString('base64') } }
      : {};
    await writeFile(authFile, JSON.stringify({ auths }), { mode: 0o600 });
    const tls = isLoopbackRegistry(ref.registry) ? ['--tls-verify=false'] : [];
    say(`pulling ${qualified}`);
    const pulled = await runPodman(iso, cfg, ['pull', '--authfile', authFile, ...tls, qualified], {
      onLine: say,
      timeoutMs: PULL_TIME_LIMIT_MS,
    });
    if (pulled.code !== 0)
      return { ok: false, reason: withoutSecret(`could not pull ${qualified}: ${podmanReason(pulled)}`, auth) };
    const inspected = await runPodman(iso, cfg, ['image', 'inspect', '--format', '{{.Digest}}', qualified]);
    const digest = inspected.stdout.trim();
    if (inspected.code !== 0 || !digest)
      return { ok: false, reason: `pulled ${qualified}, but could not read its digest: ${podmanReason(inspected)}` };
    const image = pinnedImage(ref, digest);
    say(`pulled ${image}`);
    return { ok: true, image, digest };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
