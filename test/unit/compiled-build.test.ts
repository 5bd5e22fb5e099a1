import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BERTH_ENTRY, buildBerth, IMAGE } from '../../chaos/worker-process';
import { ROOT } from '../support/env';

/**
 * The image (Dockerfile, docker-compose.yml) runs `npm run build`'s output, not the
 * TypeScript through tsx: what only the compiled shape can get wrong is checked here, on a
 * fresh build.
 */
describe('the compiled build (npm run build: dist/, what the image runs)', () => {
  const dist = path.join(ROOT, 'dist');
  const scratch = mkdtempSync(path.join(tmpdir(), 'berth-build-'));
  const node = (args: string[]) =>
    execFileSync(process.execPath, args, { cwd: scratch, env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' });

  beforeAll(() => buildBerth(), 120_000);
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('holds JavaScript only, the CLI at the path the image runs', () => {
    expect(BERTH_ENTRY.compiled).toBe(path.join(dist, 'bin', 'berth.js'));
    const ts = execFileSync('find', [dist, '-name', '*.ts', '-not', '-name', '*.d.ts'], { encoding: 'utf8' });
    expect(ts.trim()).toBe('');
    const help = spawnSync(process.execPath, [BERTH_ENTRY.compiled, 'help'], { cwd: scratch, encoding: 'utf8' });
    expect({ status: help.status, usage: help.stderr }).toEqual({
      status: 0,
      usage: expect.stringMatching(/ worker /),
    });
  });

  it('the image sets the environment the benches give the compiled processes', () => {
    const env = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('ENV '))
      .flatMap((line) => line.slice(4).trim().split(/\s+/));
    for (const [name, value] of Object.entries(IMAGE.env)) expect(env).toContain(`${name}=${value}`);
  });

  it('bundles the workflows from the compiled code, without tsx, as the image build does', () => {
    const bundle = path.join(scratch, 'workflow-bundle.js');
    node([BERTH_ENTRY.compiled, 'bundle', bundle]);
    expect(statSync(bundle).size).toBeGreaterThan(100_000);
    const code = readFileSync(bundle, 'utf8');
    expect(code).toContain('webhookDelivery');
    expect(code).toContain('appClone');
  }, 120_000);

  it('ships the git post-receive hook where the compiled code looks for it', () => {
    const script = node([
      '-p',
      `require(${JSON.stringify(path.join(dist, 'api', 'git-repos.js'))}).POST_RECEIVE_SCRIPT`,
    ]);
    expect(script.trim()).toBe(path.join(dist, 'bin', 'git-post-receive.js'));
    expect(existsSync(script.trim())).toBe(true);
    expect(readFileSync(script.trim(), 'utf8')).toBe(
      readFileSync(path.join(ROOT, 'bin', 'git-post-receive.js'), 'utf8'),
    );
  });
});
