import type { RegistryLogin } from '../../../../platform/drivers/apps';
import { isLoopbackRegistry, parseImageReference, qualifiedImage, type ImageReference } from './reference';
import { PODMAN } from './runtime';

/**
 * The base images of a Dockerfile (what its FROM lines name) and the logins a build gets
 * for them: of the app's workspace's stored registry credentials, those whose registry is
 * one a FROM names, one per registry. No other login reaches a build.
 */

/** Docker Hub's other names: a credential for any of them is Docker Hub's. */
const DOCKER_HUB_ALIASES = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io', 'registry.hub.docker.com']);

/** A registry host as the auth file and the image references name it (lower case; Docker Hub: docker.io). */
export function registryKey(host: string): string {
  const h = host.trim().toLowerCase();
  return DOCKER_HUB_ALIASES.has(h) ? 'docker.io' : h;
}

/** The Dockerfile's instructions, one string each (comments dropped, continued lines joined). */
function instructions(text: string): string[] {
  const out: string[] = [];
  let current = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (current === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.startsWith('#')) continue; // a comment inside a continued instruction
    if (line.endsWith('\\')) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    out.push(current + line);
    current = '';
  }
  if (current.trim()) out.push(current.trim());
  return out;
}

/** `$NAME` and `${NAME}` replaced with the global ARGs' defaults; null when one has none. */
function substituted(word: string, args: Map<string, string>): string | null {
  let unresolved = false;
  const out = word.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (_, a: string, b: string) => {
    const value = args.get(a ?? b);
    if (value === undefined) unresolved = true;
    return value ?? '';
  });
  return unresolved || out.includes('$') ? null : out;
}

/**
 * The images the FROM lines (and `COPY --from=`) name, in order, once each: `scratch`, an
 * earlier stage's name or index and a reference an ARG without a default makes are not
 * images of a registry.
 */
export function baseImages(dockerfile: string): ImageReference[] {
  const args = new Map<string, string>();
  const stages = new Set<string>();
  const images = new Map<string, ImageReference>();
  const add = (image: string) => {
    try {
      const ref = parseImageReference(image);
      images.set(qualifiedImage(ref), ref);
    } catch {
      // not a reference podman could pull either: the build says so
    }
  };
  let seenFrom = false;
  for (const instruction of instructions(dockerfile)) {
    const [keyword = '', ...words] = instruction.split(/\s+/);
    const kw = keyword.toUpperCase();
    if (kw === 'ARG' && !seenFrom) {
      for (const w of words) {
        const eq = w.indexOf('=');
        if (eq > 0) args.set(w.slice(0, eq), w.slice(eq + 1).replace(/^"(.*)"$/, '$1'));
      }
    }
    if (kw === 'COPY') {
      // `COPY --from=<image>`: an image the build pulls too (a stage's name or index is none)
      const from = words.find((w) => w.toLowerCase().startsWith('--from='))?.slice('--from='.length);
      const image = from ? substituted(from, args) : null;
      if (image && !/^\d+$/.test(image) && !stages.has(image.toLowerCase())) add(image);
      continue;
    }
    if (kw !== 'FROM') continue;
    seenFrom = true;
    const rest = words.filter((w) => !w.startsWith('--'));
    const [name, as, stage] = rest;
    const image = name ? substituted(name, args) : null;
    const earlierStage = image !== null && stages.has(image.toLowerCase());
    if (as?.toUpperCase() === 'AS' && stage) stages.add(stage.toLowerCase());
    if (!image || image.toLowerCase() === 'scratch' || earlierStage) continue;
    add(image);
  }
  return [...images.values()];
}

/** The logins for the registries `images` are on (the newest first among several for one registry: the first given). */
export function loginsFor(images: ImageReference[], logins: RegistryLogin[]): RegistryLogin[] {
  const wanted = new Set(images.map((i) => registryKey(i.registry)));
  const chosen = new Map<string, RegistryLogin>();
  for (const login of logins) {
    const key = registryKey(login.server);
    if (wanted.has(key) && !chosen.has(key)) chosen.set(key, login);
  }
  return [...chosen.values()];
}

/** The text of a podman auth file holding `logins`. */
export function authFileText(logins: RegistryLogin[]): string {
  const auths = Object.fromEntries(
    logins.map((l) => [registryKey(l.server), { auth: Buffer.from(`${l.username}:${l.token}`).toString('base64') }]),
  );
  return JSON.stringify({ auths });
}

/** What of a login must never be shown: its token and the base64 form an auth file holds. */
export function loginSecrets(login: { username: string; token: string }): string[] {
  return login.token ? [login.token, Buffer.from(`${login.username}:${login.token}`).toString('base64')] : [];
}

/** `podman pull` of a base image with the build's auth file (a registry on loopback over plain HTTP, as pulls do). */
export function pullBaseImageArgv(image: ImageReference, authFile: string): string[] {
  const tls = isLoopbackRegistry(image.registry) ? ['--tls-verify=false'] : [];
  return [PODMAN, 'pull', '--authfile', authFile, ...tls, qualifiedImage(image)];
}
