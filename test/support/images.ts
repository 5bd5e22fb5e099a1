import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { imageRuntimeRefusal } from '../../activities/provider/local/images/runtime';
import { freePort } from './ports';

/**
 * Container images for the tests: no public registry is reachable here, so the tests build
 * their image on this machine (FROM scratch with Debian's static busybox, serving HTTP on
 * PORT) and serve it from a test registry on loopback (Debian's docker-registry with
 * htpasswd auth, its storage in a temporary folder).
 */

const REGISTRY = '/usr/bin/docker-registry';
const HTPASSWD = '/usr/bin/htpasswd';
const BUSYBOX = '/bin/busybox';

/** Why the image tests cannot run here (null: they can): what is missing, by package. */
export function imageTestsMissing(): string | null {
  const runtime = imageRuntimeRefusal();
  if (runtime) return runtime;
  if (process.getuid?.() !== 0) return 'the image tests run podman as root';
  const missing = [
    [REGISTRY, 'docker-registry'],
    [HTPASSWD, 'apache2-utils'],
    [BUSYBOX, 'busybox-static'],
  ].filter(([file]) => !existsSync(file!));
  return missing.length > 0 ? `missing Debian packages: ${missing.map(([, pkg]) => pkg).join(', ')}` : null;
}

export interface TestRegistry {
  /** `127.0.0.1:<port>` */
  host: string;
  username: string;
  password: string;
  stop(): Promise<void>;
}

/** A registry on a free loopback port that wants `username`/`password` (htpasswd, bcrypt); `open`: no login at all. */
export async function startTestRegistry(
  username = 'pusher',
  password = `pw-${Math.random().toString(36).slice(2)}`,
  options: { open?: boolean } = {},
): Promise<TestRegistry> {
  const dir = mkdtempSync(path.join(tmpdir(), 'berth-registry-'));
  const port = await freePort();
  const htpasswd = execFileSync(HTPASSWD, ['-Bbn', username, password], { encoding: 'utf8' });
  writeFileSync(path.join(dir, 'htpasswd'), htpasswd, { mode: 0o600 });
  writeFileSync(
    path.join(dir, 'config.yml'),
    [
      'version: 0.1',
      'log:',
      '  level: warn',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${path.join(dir, 'data')}`,
      'http:',
      `  addr: 127.0.0.1:${port}`,
      ...(options.open
        ? []
        : ['auth:', '  htpasswd:', '    realm: berth-test', `    path: ${path.join(dir, 'htpasswd')}`]),
      '',
    ].join('\n'),
  );
  const proc: ChildProcess = spawn(REGISTRY, ['serve', path.join(dir, 'config.yml')], { stdio: 'ignore' });
  const host = `127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const status = await fetch(`http://${host}/v2/`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === (options.open ? 200 : 401)) break;
    if (i > 100 || proc.exitCode !== null) throw new Error(`the test registry did not start on ${host}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    host,
    username,
    password,
    async stop() {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        const kill = setTimeout(() => proc.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(kill);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The tests' own podman configuration and storage, kept between runs (the image is built once). */
function testPodmanEnv(): NodeJS.ProcessEnv {
  const dir = path.join(tmpdir(), 'berth-test-podman');
  mkdirSync(path.join(dir, 'storage'), { recursive: true, mode: 0o700 });
  const conf = path.join(dir, 'containers.conf');
  const storage = path.join(dir, 'storage.conf');
  writeFileSync(conf, '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n');
  writeFileSync(storage, `[storage]\ndriver = "overlay"\ngraphroot = "${dir}/storage"\nrunroot = "${dir}/run"\n`);
  return { PATH: process.env.PATH, CONTAINERS_CONF: conf, CONTAINERS_STORAGE_CONF: storage };
}

/** The page the test image serves. */
export const TEST_IMAGE_PAGE = 'hello from a container image\n';

/**
 * Builds the test image (cached: the same context builds nothing new) and pushes it to the
 * registry as `<host>/<repo>`: FROM scratch, busybox, `httpd -f -p $PORT` serving one page
 * (TEST_IMAGE_PAGE unless `page` is given: another image); with `user`, the image's USER is
 * that uid and it writes its uid to /uid before serving.
 * Answers the pushed reference.
 */
export function pushTestImage(
  registry: TestRegistry,
  repo = 'acme/hello:1',
  page = TEST_IMAGE_PAGE,
  options: { user?: number } = {},
): string {
  const env = testPodmanEnv();
  const context = mkdtempSync(path.join(tmpdir(), 'berth-image-ctx-'));
  try {
    execFileSync('cp', [BUSYBOX, path.join(context, 'busybox')]);
    mkdirSync(path.join(context, 'www'));
    writeFileSync(path.join(context, 'www', 'index.html'), page);
    const { user } = options;
    writeFileSync(
      path.join(context, 'Containerfile'),
      (user === undefined
        ? [
            'FROM scratch',
            'COPY busybox /bin/busybox',
            'COPY www /www',
            'CMD ["/bin/busybox", "sh", "-c", "exec /bin/busybox httpd -f -p $PORT -h /www"]',
          ]
        : [
            // www is the user's: it writes its uid there (/uid) before serving
            'FROM scratch',
            'COPY busybox /bin/busybox',
            `COPY --chown=${user}:${user} www /www`,
            `USER ${user}`,
            'CMD ["/bin/busybox", "sh", "-c", "/bin/busybox id -u > /www/uid; exec /bin/busybox httpd -f -p $PORT -h /www"]',
          ]
      ).join('\n'),
    );
    const variant = `${page}\0${user ?? ''}`;
    const local = `localhost/berth-test-hello:${variant === `${TEST_IMAGE_PAGE}\0` ? '1' : createHash('sha256').update(variant).digest('hex').slice(0, 12)}`;
    execFileSync('podman', ['build', '--quiet', '--timestamp', '0', '-t', local, context], { env, stdio: 'pipe' });
    const ref = `${registry.host}/${repo}`;
    execFileSync(
      'podman',
      ['push', '--quiet', '--tls-verify=false', '--creds', `${registry.username}:${registry.password}`, local, ref],
      { env, stdio: 'pipe' },
    );
    return ref;
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}

/**
 * A Dockerfile the tests build here (no public registry): FROM scratch, the folders a
 * root file system has (`base/`, as a base image has them: a RUN step's runtime mounts
 * /proc, /dev, /sys and /run there), Debian's static busybox copied in from the context
 * (the file `busybox`), its applets installed by a RUN step, then `runs` (shell RUN
 * steps), serving `www/` over HTTP on PORT (or, with ALLOC_MB set, allocating that many MiB),
 * after the shell command `boot` if given.
 */
export function busyboxDockerfile(runs: string[] = [], boot = ''): string {
  // with ALLOC_MB set it allocates that much instead (an app over its memory quota)
  const start = `${boot ? `${boot}; ` : ''}if [ -n "$ALLOC_MB" ]; then exec dd if=/dev/zero of=/dev/null bs=\${ALLOC_MB}M count=1; fi; exec httpd -f -p $PORT -h /www`;
  return [
    'FROM scratch',
    'COPY base /',
    'COPY busybox /bin/busybox',
    'RUN ["/bin/busybox", "--install", "-s", "/bin"]',
    ...runs.map((r) => `RUN ${r}`),
    'COPY www /www',
    `CMD ${JSON.stringify(['/bin/sh', '-c', start])}`,
    '',
  ].join('\n');
}

/** Puts Debian's static busybox (the file `busybox`) and the root folders (`base/`) into a working copy, for busyboxDockerfile. */
export function addBusybox(dir: string): void {
  execFileSync('cp', [BUSYBOX, path.join(dir, 'busybox')]);
  for (const sub of ['bin', 'dev', 'etc', 'proc', 'run', 'sys', 'tmp']) {
    mkdirSync(path.join(dir, 'base', sub), { recursive: true });
    writeFileSync(path.join(dir, 'base', sub, '.keep'), '');
  }
}
