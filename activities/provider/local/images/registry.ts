import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import type { RegistrySetting } from '../../../../platform/config';
import { LOOPBACK } from '../sandbox/launcher';

const run = promisify(execFile);

/** Debian's registry (docker-registry) and apache2-utils' htpasswd (its logins are bcrypt). */
export const REGISTRY_BINARY = '/usr/bin/docker-registry';
export const HTPASSWD = '/usr/bin/htpasswd';

/**
 * The platform's image registry: every image Berth pulls or builds for a release is pushed
 * there and the release runs it from there, by digest, so a release is an image any machine
 * of the platform can pull.
 */
export interface PlatformRegistry {
  /** `host:port`, what image names start with (`<host>/berth/<app>@sha256:...`). */
  host: string;
  /** An auth file (0600) with the platform's login, given to podman push and pull; null: none. */
  authFile: string | null;
  /** One line for the start banner. */
  summary: string;
  close(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, LOOPBACK, () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

const authJson = (host: string, username: string, password: string) =>
  JSON.stringify({ auths: { [host]: { auth: Buffer.from(`${username}:${password}`).toString('base64') } } });

/**
 * The registry's own garbage collection (`docker-registry garbage-collect`): the blobs no
 * manifest names any more (image pruning deletes release manifests, images/prune.ts) are
 * removed. It must not run beside pushes, so it runs here, before the registry serves. Only
 * unreferenced blobs go: Berth's releases are pushed by digest, untagged, so
 * `--delete-untagged` is never used. A failure is logged and the registry starts anyway.
 */
async function collectGarbage(dir: string, config: string, logger: Logger): Promise<void> {
  if (!existsSync(path.join(dir, 'data', 'docker', 'registry', 'v2', 'repositories'))) return; // nothing pushed yet
  try {
    const { stdout } = await run(REGISTRY_BINARY, ['garbage-collect', config], {
      timeout: 10 * 60_000,
      maxBuffer: 64 * 2 ** 20,
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
    });
    const freed = stdout.split('\n').filter((l) => l.startsWith('blob eligible for deletion')).length;
    if (freed > 0) logger.info({ freed }, 'the embedded image registry freed the blobs no release names');
  } catch (err) {
    logger.warn({ err: (err as Error).message }, "the embedded image registry's garbage collection failed");
  }
}

/**
 * The embedded registry: Debian's docker-registry on loopback, a child of Berth, its storage
 * and its login under `dir` (kept across restarts: the port too, since releases name it).
 * The login is made at first start (user `berth`, a random password; htpasswd, bcrypt).
 */
async function startEmbedded(dir: string, logger: Logger): Promise<PlatformRegistry> {
  await mkdir(path.join(dir, 'data'), { recursive: true, mode: 0o700 });
  const portFile = path.join(dir, 'port');
  const passwordFile = path.join(dir, 'password');
  const port = Number(await readFile(portFile, 'utf8').catch(() => '')) || (await freePort());
  await writeFile(portFile, String(port), { mode: 0o600 });
  let password = (await readFile(passwordFile, 'utf8').catch(() => '')).trim();
  if (!password) {
    password = randomBytes(24).toString('base64url');
    await writeFile(passwordFile, password, { mode: 0o600 });
  }
  const htpasswd = (await run(HTPASSWD, ['-Bbn', 'berth', password])).stdout;
  await writeFile(path.join(dir, 'htpasswd'), htpasswd, { mode: 0o600 });
  const host = `${LOOPBACK}:${port}`;
  const config = path.join(dir, 'config.yml');
  await writeFile(
    config,
    [
      '# Written by Berth (activities/provider/local/images/registry.ts) at each start.',
      'version: 0.1',
      'log:',
      '  level: warn',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${path.join(dir, 'data')}`,
      '  delete:',
      '    enabled: true',
      'http:',
      `  addr: ${host}`,
      'auth:',
      '  htpasswd:',
      '    realm: berth',
      `    path: ${path.join(dir, 'htpasswd')}`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const authFile = path.join(dir, 'auth.json');
  await writeFile(authFile, authJson(host, 'berth', password), { mode: 0o600 });
  await collectGarbage(dir, config, logger);
  const proc: ChildProcess = spawn(REGISTRY_BINARY, ['serve', config], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
  });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-2000);
  });
  for (let i = 0; ; i++) {
    const status = await fetch(`http://${host}/v2/`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 401) break;
    if (i > 150 || proc.exitCode !== null) {
      proc.kill('SIGKILL');
      throw new Error(`the embedded registry did not start on ${host}: ${stderr.trim().split('\n').at(-1) ?? ''}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.on('exit', (code, signal) => {
    if (!closing) logger.error({ code, signal, stderr }, 'the embedded image registry ended');
  });
  let closing = false;
  return {
    host,
    authFile,
    summary: `${host}   (embedded docker-registry; login berth, password in ${passwordFile})`,
    async close() {
      closing = true;
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      const kill = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(kill);
    },
  };
}

/**
 * The registry of BERTH_REGISTRY (embedded by default), or null with the reason (`off`, or the
 * embedded one cannot run here): release images then stay in this machine's podman storage.
 */
export async function openPlatformRegistry(
  setting: RegistrySetting,
  dir: string,
  logger: Logger,
): Promise<{ registry: PlatformRegistry | null; summary: string }> {
  if (setting.kind === 'off')
    return { registry: null, summary: 'off (BERTH_REGISTRY=off): release images stay on this machine' };
  if (setting.kind === 'external') {
    let authFile: string | null = null;
    if (setting.username && setting.password) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      authFile = path.join(dir, 'external-auth.json');
      await writeFile(authFile, authJson(setting.host, setting.username, setting.password), { mode: 0o600 });
    }
    const summary = `${setting.host}   (BERTH_REGISTRY${authFile ? `, login ${setting.username}` : ', no login'})`;
    return { registry: { host: setting.host, authFile, summary, close: async () => {} }, summary };
  }
  const missing = [
    [REGISTRY_BINARY, 'docker-registry'],
    [HTPASSWD, 'apache2-utils'],
  ].filter(([file]) => !existsSync(file!));
  if (missing.length > 0) {
    const names = missing.map(([, pkg]) => pkg).join(', ');
    return {
      registry: null,
      summary: `off: this machine lacks Debian's ${names}; release images stay on this machine`,
    };
  }
  try {
    const registry = await startEmbedded(dir, logger);
    return { registry, summary: registry.summary };
  } catch (err) {
    logger.error({ err: (err as Error).message }, 'the embedded image registry could not start');
    return { registry: null, summary: `off: ${(err as Error).message}` };
  }
}
