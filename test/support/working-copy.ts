import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The fixture apps (test/fixtures/apps/<name>). */
const FIXTURES = path.join(__dirname, '..', 'fixtures', 'apps');

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-C', dir, ...args], {
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'Dev',
      GIT_AUTHOR_EMAIL: 'dev@example.test',
      GIT_COMMITTER_NAME: 'Dev',
      GIT_COMMITTER_EMAIL: 'dev@example.test',
      GIT_CONFIG_NOSYSTEM: '1',
      HOME: dir,
      GIT_TERMINAL_PROMPT: '0',
    },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export interface WorkingCopy {
  dir: string;
  commit(files: Record<string, string>, message: string): void;
  /** The commit HEAD names. */
  head(): string;
  dispose(): void;
}

/** A working copy of a fixture app, as a developer has it before `git push` (one commit on main). */
export function workingCopy(fixture: string, extra: Record<string, string> = {}): WorkingCopy {
  const dir = mkdtempSync(path.join(tmpdir(), `berth-wc-${fixture}-`));
  cpSync(path.join(FIXTURES, fixture), dir, { recursive: true });
  for (const [name, text] of Object.entries(extra)) writeFileSync(path.join(dir, name), text);
  git(dir, 'init', '--quiet', '--initial-branch', 'main');
  git(dir, 'add', '-A');
  git(dir, 'commit', '--quiet', '-m', `${fixture}: first version`);
  return {
    dir,
    commit(files, message) {
      for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
      git(dir, 'add', '-A');
      git(dir, 'commit', '--quiet', '-m', message);
    },
    head: () => git(dir, 'rev-parse', 'HEAD').trim(),
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}
