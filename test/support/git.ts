import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'compose');
const APP_FIXTURES = path.join(__dirname, '..', 'fixtures', 'apps');

/** A compose fixture's text (test/fixtures/compose). */
export function fixture(name: string): string {
  return readFileSync(path.join(FIXTURES, name), 'utf8');
}

/** The files of an app fixture (test/fixtures/apps/<name>), by path, to commit with `localRepo`. */
export function appFixture(name: string): Record<string, string> {
  return fixtureFiles(path.join(APP_FIXTURES, name));
}

/** The files of a stack fixture (test/fixtures/stacks/<name>: a compose file and its services' folders), by path. */
export function stackFixture(name: string): Record<string, string> {
  return fixtureFiles(path.join(__dirname, '..', 'fixtures', 'stacks', name));
}

function fixtureFiles(root: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    files[path.relative(root, full)] = readFileSync(full, 'utf8');
  }
  return files;
}

export interface LocalRepo {
  dir: string;
  url: string;
  /** Commits files on a branch (created from the current HEAD if new); answers the commit sha. */
  commit(files: Record<string, string>, options?: { branch?: string; message?: string; remove?: string[] }): string;
  /** The commit the default branch points at. */
  head(): string;
  dispose(): void;
}

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-C', dir, ...args], {
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'Test',
      GIT_AUTHOR_EMAIL: 't@example.test',
      GIT_COMMITTER_NAME: 'Test',
      GIT_COMMITTER_EMAIL: 't@example.test',
      GIT_CONFIG_NOSYSTEM: '1',
      HOME: dir,
    },
    encoding: 'utf8',
  }).trim();
}

/** A real git repository in a temp dir, served by file:// URL. */
export function localRepo(files: Record<string, string>, branch = 'main'): LocalRepo {
  const dir = mkdtempSync(path.join(tmpdir(), 'berth-repo-'));
  git(dir, 'init', '--quiet', '--initial-branch', branch);
  const repo: LocalRepo = {
    dir,
    url: `file://${dir}`,
    commit(more, options = {}) {
      if (options.branch) {
        const exists = git(dir, 'branch', '--list', options.branch) !== '';
        git(dir, 'checkout', '--quiet', ...(exists ? [] : ['-b']), options.branch);
      }
      for (const [name, content] of Object.entries(more)) {
        mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
        writeFileSync(path.join(dir, name), content);
      }
      for (const name of options.remove ?? []) git(dir, 'rm', '--quiet', name);
      git(dir, 'add', '--all');
      git(dir, 'commit', '--quiet', '--allow-empty', '-m', options.message ?? 'change');
      const sha = git(dir, 'rev-parse', 'HEAD');
      if (options.branch) git(dir, 'checkout', '--quiet', branch);
      return sha;
    },
    head: () => git(dir, 'rev-parse', 'HEAD'),
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
  repo.commit(files, { message: 'initial' });
  return repo;
}
