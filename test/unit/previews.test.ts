import { createHmac } from 'node:crypto';
import { signatureMatches, signBody } from '../../api/code-host';
import { assignmentRefusal } from '../../domain/placement';
import { branchMatches, branchPatternProblem, previewAppName, previewKey } from '../../domain/previews';

describe('preview rules', () => {
  it('branch patterns: * within a segment, ** across, ? one character', () => {
    expect(branchMatches('feature/*', 'feature/login')).toBe(true);
    expect(branchMatches('feature/*', 'feature/a/b')).toBe(false);
    expect(branchMatches('release/**', 'release/2.0/rc')).toBe(true);
    expect(branchMatches('v?', 'v1')).toBe(true);
    expect(branchMatches('staging', 'staging')).toBe(true);
    expect(branchMatches('staging', 'staging-2')).toBe(false);
    expect(branchMatches('a.b', 'axb')).toBe(false);
    expect(branchPatternProblem('bad pattern')).not.toBeNull();
    expect(branchPatternProblem('a..b')).not.toBeNull();
    expect(branchPatternProblem('feature/**')).toBeNull();
  });

  it("PRV-03 PRV-04 keys and app names: pr-<number> or the branch, suffixed to the parent's name", () => {
    expect(previewKey({ pullRequest: 12 })).toBe('pr-12');
    expect(previewKey({ branch: 'feature/x' })).toBe('branch-feature/x');
    expect(previewAppName('web-1a2b3c', { pullRequest: 12 })).toBe('web-1a2b3c-pr-12');
    expect(previewAppName('web-1a2b3c', { branch: 'Feature/Login_Page' })).toBe('web-1a2b3c-feature-login-page');
  });

  it('PRV-09 a resource assigned to projects must count the target project among them', () => {
    expect(assignmentRefusal([], null)).toBeNull();
    expect(assignmentRefusal([], 'p1')).toBeNull();
    expect(assignmentRefusal(['p1', 'p2'], 'p2')).toBeNull();
    expect(assignmentRefusal(['p1'], 'p2')?.message).toMatch(/other projects/);
    expect(assignmentRefusal(['p1'], null)).not.toBeNull();
  });

  it('X-Hub-Signature-256 is sha256=<hex HMAC-SHA256 of the raw body>, checked exactly', () => {
    const body = Buffer.from('{"zen":"Keep it logically awesome."}');
    const header = `sha256=${createHmac('sha256', "It's a Secret to Everybody").update(body).digest('hex')}`;
    expect(signBody("It's a Secret to Everybody", body)).toBe(header);
    expect(signatureMatches("It's a Secret to Everybody", body, header)).toBe(true);
    expect(signatureMatches("It's a Secret to Everybody", body, header.toUpperCase().replace('SHA256', 'sha256'))).toBe(
      true,
    );
    expect(signatureMatches('another secret', body, header)).toBe(false);
    expect(signatureMatches("It's a Secret to Everybody", Buffer.from(`${body} `), header)).toBe(false);
    expect(signatureMatches("It's a Secret to Everybody", body, header.slice(0, -2))).toBe(false);
    expect(signatureMatches("It's a Secret to Everybody", body, undefined)).toBe(false);
    expect(signatureMatches("It's a Secret to Everybody", body, `sha1=${'0'.repeat(40)}`)).toBe(false);
  });

  it("matches GitHub's published test vector", () => {
    // docs.github.com "Validating webhook deliveries": secret "It's a Secret to Everybody", payload "Hello, World!"
    expect(signBody("It's a Secret to Everybody", 'Hello, World!')).toBe(
      'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
    );
  });
});
