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
 * The environment git runs with to fetch user repositories: never prompting, only https
 * (and file, where allowed) transports, and a stored credential as an HTTP Authorization
 * header through GIT_CONFIG_* variables: never in the URL, the arguments or a log.
 */
export function gitEnv(options: {
  home: string;
  allowFile: boolean;
  caFile?: string;
  credential?: GitCredential | null;
}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    // eslint-disable-next-line no-restricted-properties -- not configuration: git is found on the worker's own PATH
    PATH: process.env.PATH,
    HOME: options.home,
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: 'true',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_ALLOW_PROTOCOL: options.allowFile ? 'https:file' : 'https',
    GIT_LFS_SKIP_SMUDGE: '1',
  };
  if (options.caFile) env.GIT_SSL_CAINFO = options.caFile;
  if (options.credential) {
    const basic = Buffer.from(`${options.credential.username}:${options.credential.token}`).toString('base64');
    Object.assign(env, {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
    });
  }
  return env;
}

/**
 * A shallow clone of one branch with the real git, into a temporary directory the caller
 * removes with `dispose`. A stored credential travels as an HTTP Authorization header set
 * through GIT_CONFIG_* environment variables: never in the URL, the arguments or a log.
 * Only https (and file, where allowed) transports are enabled.
 */
export async function cloneBranch(
  url: string,
  branch: string,
  options: { credential?: GitCredential | null; allowFile: boolean; caFile?: string; timeoutMs?: number },
): Promise<{ dir: string; commitSha: string; dispose(): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'berth-git-'));
  const env = gitEnv({
    home: dir,
    allowFile: options.allowFile,
    caFile: options.caFile,
    credential: options.credential,
  });
  const dispose = () => rm(dir, { recursive: true, force: true });
  const work = path.join(dir, 'repo');
  try {
    await run(
      'git',
      ['clone', '--quiet', '--depth', '1', '--single-branch', '--no-tags', '--branch', branch, '--', url, work],
      { env, timeout: options.timeoutMs ?? 120_000, maxBuffer: 1024 * 1024 },
    );
    const { stdout } = await run('git', ['-C', work, 'rev-parse', 'HEAD'], { env, timeout: 10_000 });
    return { dir: work, commitSha: stdout.trim(), dispose };
  } catch (err) {
    await dispose();
    const e = err as { stderr?: string; killed?: boolean; message: string };
    const detail = e.killed
      ? 'timed out'
      : (e.stderr ?? e.message)
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean)
          .slice(-2)
          .join(' ');
    throw ApplicationFailure.nonRetryable(
      `could not clone ${url} (branch ${branch}): ${detail.slice(0, 400)}`,
      'GitError',
    );
  }
}

/** Real git, never prompting for credentials, bounded in time. */
async function git(args: string[], cwd?: string): Promise<string> {
  // `env` adds the variables to the inherited environment: never prompt, never ask for a password.
  const { stdout } = await run('env', ['GIT_TERMINAL_PROMPT=0', 'GIT_ASKPASS=true', 'git', ...args], {
    cwd,
    timeout: 30_000,
    maxBuffer: 4 * 1024 * 1024,
  });
  return stdout;
}

export class GitError extends Error {}

/** The head commit of a branch (`git ls-remote`); null when the branch does not exist. */
export async function branchHead(repository: string, branch: string): Promise<string | null> {
  let out: string;
  try {
    out = await git(['ls-remote', '--heads', '--', repository, `refs/heads/${branch}`]);
  } catch (err) {
    const stderr = String((err as { stderr?: string }).stderr ?? (err as Error).message)
      .trim()
      .split('\n')
      .pop();
    throw new GitError(`repository ${repository} is not reachable: ${stderr}`);
  }
  const line = out.split('\n').find((l) => l.endsWith(`\trefs/heads/${branch}`));
  return line ? line.split('\t')[0]! : null;
}

/** The subject line of a commit, fetched shallowly into a scratch repository; null if it cannot be fetched. */
export async function commitSubject(repository: string, ref: string): Promise<{ sha: string; subject: string } | null> {
  const dir = await mkdtemp(path.join(tmpdir(), 'berth-git-'));
  try {
    await git(['init', '--bare', '-q', dir]);
    await git(['fetch', '-q', '--depth=1', '--no-tags', '--', repository, ref], dir);
    const out = await git(['log', '-1', '--format=%H%n%s', 'FETCH_HEAD'], dir);
    const [sha, subject] = out.split('\n');
    return sha ? { sha, subject: subject ?? '' } : null;
  } catch {
    return null;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
