import { BRANCH, normalizeRepositoryUrl } from '../../domain/git-urls';

/** [input, allowFile, ownerRepoHost, normalized URL or a problem matching] */
const urls: Array<[string, boolean, string | undefined, { url: string } | { problem: RegExp }]> = [
  ['https://example.com/acme/web.git', false, undefined, { url: 'https://example.com/acme/web.git' }],
  ['https://example.com/acme/web/', false, undefined, { url: 'https://example.com/acme/web' }],
  ['  https://example.com/acme/web  ', false, undefined, { url: 'https://example.com/acme/web' }],
  ['example.com/acme/web', false, undefined, { url: 'https://example.com/acme/web' }],
  ['http://example.com/acme/web.git', false, undefined, { problem: /https/ }],
  ['ssh://git@example.com/acme/web.git', false, undefined, { problem: /https/ }],
  ['git://example.com/acme/web.git', false, undefined, { problem: /https/ }],
  ['git@example.com:acme/web.git', false, undefined, { problem: /./ }],
  ['https://user:token@example.com/acme/web.git', false, undefined, { problem: /credentials/ }],
  ['https://localhost/acme/web.git', false, undefined, { problem: /on a host/ }],
  ['https://example.com/', false, undefined, { problem: /on a host/ }],
  ['ext::sh -c touch% /tmp/pwned', false, undefined, { problem: /./ }],
  ['acme/web', false, undefined, { problem: /on a host/ }],
  ['file:///srv/git/web.git', false, undefined, { problem: /not allowed/ }],
  ['file:///srv/git/web.git', true, undefined, { url: 'file:///srv/git/web.git' }],
  ['acme/web', false, 'github.com', { url: 'https://github.com/acme/web.git' }],
  ['acme/web.git', false, 'github.com', { url: 'https://github.com/acme/web.git' }],
  ['https://github.com/acme/web.git', false, 'github.com', { url: 'https://github.com/acme/web.git' }],
  ['ssh://git@github.com/acme/web.git', false, 'github.com', { problem: /https/ }],
];

describe('git repository URLs (domain/git-urls.ts)', () => {
  it.each(urls)('STK-11 %s (file:// allowed: %s, owner/repo host: %s)', (input, allowFile, ownerRepoHost, expected) => {
    const r = normalizeRepositoryUrl(input, allowFile, { ownerRepoHost });
    if ('url' in expected) expect(r).toEqual(expected);
    else expect('problem' in r && r.problem).toMatch(expected.problem);
  });

  it.each([
    ['main', true],
    ['feature/login', true],
    ['release-2.0', true],
    ['v1.2_rc', true],
    ['-rf', false],
    ['/main', false],
    ['main/', false],
    ['main.', false],
    ['a..b', false],
    ['a//b', false],
    ['a@{1}', false],
    ['has space', false],
    ['', false],
    ['x'.repeat(201), false],
  ] as const)('branch %s is valid: %s', (name, valid) => {
    expect(BRANCH.test(name)).toBe(valid);
  });
});
