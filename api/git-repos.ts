import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { LocalLayout } from '../platform/local-layout';

const run = promisify(execFile);

/** PATH of the git processes Berth runs for repositories (their environment holds nothing of Berth's own). */
export const GIT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The post-receive hook's program (plain CommonJS on Node built-ins, run by the repository's hook). */
export const POST_RECEIVE_SCRIPT = path.resolve(__dirname, '..', 'bin', 'git-post-receive.js');

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** hooks/post-receive: runs the hook program with this Node (absolute paths: git's hook environment has a minimal PATH). */
export function postReceiveHook(): string {
  return `#!/bin/sh\n# Installed by Berth: reports a push's deployment to the pusher (bin/git-post-receive.js).\nexec ${shellQuote(process.execPath)} ${shellQuote(POST_RECEIVE_SCRIPT)}\n`;
}

const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

/** Writes the hook when it is missing or stale (another Node, another checkout), atomically. */
async function installHook(repo: string): Promise<void> {
  const file = path.join(repo, 'hooks', 'post-receive');
  const text = postReceiveHook();
  if ((await readFile(file, 'utf8').catch(() => null)) === text) return;
  const tmp = `${file}.${randomBytes(6).toString('hex')}`;
  await writeFile(tmp, text, { mode: 0o755 });
  await chmod(tmp, 0o755);
  await rename(tmp, file);
}

const creating = new Map<string, Promise<string>>();

/**
 * The app's bare repository, created on first access: `git init --bare` into a fresh
 * folder beside it, configured (receive-pack on, no other hooks' samples) with the hook,
 * then renamed into place. A rename onto an existing repository fails, so when two
 * processes (or requests) create it at once one wins and the other discards its copy: the
 * repository appears whole or not at all. Its HEAD names `branch` (the tracked branch, so a
 * clone checks it out). Answers the repository's path.
 */
export function ensureRepository(layout: LocalLayout, appName: string, branch: string): Promise<string> {
  const repo = layout.gitRepo(appName);
  const pending = creating.get(repo);
  if (pending) return pending;
  const work = (async () => {
    if (!(await exists(path.join(repo, 'HEAD')))) {
      await mkdir(path.dirname(repo), { recursive: true, mode: 0o700 });
      const tmp = `${repo}.init-${randomBytes(6).toString('hex')}`;
      try {
        await run('git', ['init', '--quiet', '--bare', '--initial-branch', branch, tmp], {
          env: { PATH: GIT_PATH, GIT_CONFIG_NOSYSTEM: '1', HOME: tmp },
        });
        await run('git', ['config', '--file', path.join(tmp, 'config'), 'http.receivepack', 'true'], {
          env: { PATH: GIT_PATH, GIT_CONFIG_NOSYSTEM: '1', HOME: tmp },
        });
        await rm(path.join(tmp, 'hooks'), { recursive: true, force: true });
        await mkdir(path.join(tmp, 'hooks'));
        await installHook(tmp);
        await rename(tmp, repo).catch(async (err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
        });
      } finally {
        await rm(tmp, { recursive: true, force: true });
      }
    }
    await installHook(repo);
    return repo;
  })();
  creating.set(repo, work);
  return work.finally(() => creating.delete(repo));
}
