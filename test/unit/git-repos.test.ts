import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { localLayout } from '../../platform/local-layout';

type Module = typeof import('../../api/git-repos');

/** Two copies of the module (two API processes: no shared in-process memo). */
function twoProcesses(): [Module, Module] {
  const load = (): Module => {
    let m: Module | undefined;
    jest.isolateModules(() => {
      m = require('../../api/git-repos') as Module;
    });
    return m!;
  };
  return [load(), load()];
}

describe('git_push repositories', () => {
  it('concurrent first accesses from several processes create one whole repository, with its hook', async () => {
    const layout = localLayout({ dataDir: mkdtempSync(path.join(tmpdir(), 'berth-repos-')) });
    const [a, b] = twoProcesses();
    const paths = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).ensureRepository(layout, 'web-ab12cd', 'production')),
    );
    const repo = layout.gitRepo('web-ab12cd');
    expect(new Set(paths)).toEqual(new Set([repo]));
    expect(readdirSync(path.dirname(repo))).toEqual(['web-ab12cd.git']);
    expect(
      execFileSync('git', ['--git-dir', repo, 'rev-parse', '--is-bare-repository'], { encoding: 'utf8' }).trim(),
    ).toBe('true');
    expect(execFileSync('git', ['--git-dir', repo, 'config', 'http.receivepack'], { encoding: 'utf8' }).trim()).toBe(
      'true',
    );
    expect(execFileSync('git', ['--git-dir', repo, 'symbolic-ref', 'HEAD'], { encoding: 'utf8' }).trim()).toBe(
      'refs/heads/production',
    );
    expect(readdirSync(path.join(repo, 'hooks'))).toEqual(['post-receive']);
    expect(readFileSync(path.join(repo, 'hooks', 'post-receive'), 'utf8')).toContain(
      `'${process.execPath}' '${a.POST_RECEIVE_SCRIPT}'`,
    );
  });
});
