import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ApplicationFailure } from '@temporalio/common';

const run = promisify(execFile);

export interface GitCredential {
  username: string;
  token: string;
}

/**
 * A shallow clone of one branch with the real git, into a temporary directory the caller
 * removes with `dispose`. A stored credential travels as an HTTP Authorization header set
 * through GIT_CONFIG_* environment variables: never in the URL, the arguments or a log.
 * Only https (and file, where allowed) transports are enabled.
 */
export async function cloneBranch(url: string, branch: string, options: { credential?: GitCredential | null; allowFile: boolean; caFile?: string; timeoutMs?: number }): Promise<{ dir: string; commitSha: string; dispose(): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'berth-git-'));
  const env: NodeJS.ProcessEnv = {
    // eslint-disable-next-line no-restricted-properties -- not configuration: git is found on the worker's own PATH
    PATH: process.env.PATH,
    HOME: dir,
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: 'true',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_ALLOW_PROTOCOL: options.allowFile ? 'https:file' : 'https',
    GIT_LFS_SKIP_SMUDGE: '1',
  };
  if (options.caFile) env.GIT_SSL_CAINFO = options.caFile;
  if (options.credential) {
    const basic = Buffer.from(`${options.credential.username}:${options.credential.token}`).toString('base64');
    Object.assign(env, { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}` });
  }
  const dispose = () => rm(dir, { recursive: true, force: true });
  const work = path.join(dir, 'repo');
  try {
    await run('git', ['clone', '--quiet', '--depth', '1', '--single-branch', '--no-tags', '--branch', branch, '--', url, work],
      { env, timeout: options.timeoutMs ?? 120_000, maxBuffer: 1024 * 1024 });
    const { stdout } = await run('git', ['-C', work, 'rev-parse', 'HEAD'], { env, timeout: 10_000 });
    return { dir: work, commitSha: stdout.trim(), dispose };
  } catch (err) {
    await dispose();
    const e = err as { stderr?: string; killed?: boolean; message: string };
    const detail = e.killed ? 'timed out' : (e.stderr ?? e.message).split('\n').map((l) => l.trim()).filter(Boolean).slice(-2).join(' ');
    throw ApplicationFailure.nonRetryable(`could not clone ${url} (branch ${branch}): ${detail.slice(0, 400)}`, 'GitError');
  }
}
