import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';
import { ROOT } from '../support/env';

const run = promisify(execFile);
let stack: TestStack;
let ws: Workspace;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
});
afterAll(() => stack.close());

function berth(...args: string[]) {
  return run(process.execPath, [path.join(ROOT, 'bin', 'berth.js'), ...args], {
    env: { ...process.env, DATABASE_URL: stack.db.url },
    cwd: ROOT,
  });
}

describe('berth token', () => {
  it('creates a workspace token with explicit permissions, printed once on stdout, usable at once', async () => {
    const { stdout, stderr } = await berth(
      'token',
      'create',
      '--workspace',
      ws.name,
      '--permissions',
      'projects:manage',
    );
    const token = stdout.trim();
    expect(token).toMatch(/^brt_[A-Za-z0-9_-]{43}$/);
    expect(stderr).not.toContain(token);
    const [row] = await stack.ds.query(
      `SELECT token_hash, permissions, member_uuid FROM api_tokens WHERE token_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex')`,
      [token],
    );
    expect(row).toMatchObject({ permissions: ['projects:manage'], member_uuid: null });
    expect(JSON.stringify(await stack.ds.query(`SELECT * FROM api_tokens`))).not.toContain(token);
    await stack.http
      .post('/api/v1/projects')
      .set('Authorization', `Bearer ${token}`)
      .send({ name: 'from-cli' })
      .expect(201);
    await stack.http.get('/api/v1/resources').set('Authorization', `Bearer ${token}`).expect(200);
  });

  it('creates a member token with a role (by workspace uuid), and revokes it', async () => {
    const { stdout } = await berth(
      'token',
      'create',
      '--workspace',
      ws.uuid,
      '--role',
      'admin',
      '--email',
      'ops@example.test',
      '--expires-in-days',
      '30',
    );
    const token = stdout.trim();
    const me = await stack.ds.query(
      `SELECT r.name, t.expires_at FROM api_tokens t JOIN members m ON m.uuid = t.member_uuid JOIN roles r ON r.uuid = m.role_uuid WHERE t.token_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex')`,
      [token],
    );
    expect(me[0].name).toBe('admin');
    expect(new Date(me[0].expires_at).getTime()).toBeGreaterThan(Date.now() + 29 * 86_400_000);
    await stack.http.get('/api/v1/projects').set('Authorization', `Bearer ${token}`).expect(200);
    await berth('token', 'revoke', token);
    const res = await stack.http.get('/api/v1/projects').set('Authorization', `Bearer ${token}`);
    expect(res.status).toBe(401);
  });

  it('refuses unknown permissions and a missing workspace with a clear error', async () => {
    await expect(
      berth('token', 'create', '--workspace', ws.name, '--permissions', 'apps:everything'),
    ).rejects.toMatchObject({ stderr: expect.stringContaining('unknown permission') });
    await expect(berth('token', 'create', '--workspace', 'no-such-ws', '--role', 'admin')).rejects.toMatchObject({
      stderr: expect.stringContaining('no workspace'),
    });
  });
});
