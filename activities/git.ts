import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

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
    const stderr = String((err as { stderr?: string }).stderr ?? (err as Error).message).trim().split('\n').pop();
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
