import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../support/env';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';

const run = promisify(execFile);
let stack: TestStack;
let ws: Workspace;
const GIB = 2 ** 30;

beforeAll(async () => {
  stack = await startStack();
  ws = await seedWorkspace(stack.ds);
  await stack.ds.query(
    `INSERT INTO regions (name, code, domain) VALUES ('Frankfurt', 'fra1', 'fra1.berth.localhost') ON CONFLICT (code) DO NOTHING`,
  );
});
afterAll(() => stack.close());

function berth(...args: string[]) {
  return run(process.execPath, [path.join(ROOT, 'bin', 'berth.js'), ...args], {
    env: { ...process.env, DATABASE_URL: stack.db.url },
    cwd: ROOT,
  });
}

describe('berth resource', () => {
  it("create prints the new compute resource's uuid alone on stdout; the API places apps on it", async () => {
    const { stdout, stderr } = await berth(
      'resource',
      'create',
      '--workspace',
      ws.name,
      '--name',
      'edge-1',
      '--region',
      'fra1',
      '--plan',
      'standard',
      '--cpu',
      '4',
      '--ram',
      '8',
      '--disk',
      '100',
    );
    const uuid = stdout.trim();
    expect(uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(stderr).toContain('edge-1');
    const res = await stack.http.get('/api/v1/resources').set('Authorization', `Bearer ${ws.ownerToken}`).expect(200);
    const created = res.body.find((r: { uuid: string }) => r.uuid === uuid);
    expect(created).toMatchObject({
      name: 'edge-1',
      region: expect.objectContaining({ code: 'fra1' }),
      total_cpu_size: 4,
      total_ram_size: 8 * GIB,
      total_disk_size: 100 * GIB,
      plan: expect.objectContaining({ plan_type: 'standard', cpu_size: 4, ram_size: 8 * GIB, disk_size: 100 * GIB }),
    });
    await stack.http
      .post('/api/v1/apps')
      .set('Authorization', `Bearer ${ws.ownerToken}`)
      .send({ name: 'on-edge', resource_id: uuid })
      .expect(201);

    const free = (
      await berth('resource', 'create', '--workspace', ws.uuid, '--name', 'hobby', '--region', 'fra1', '--plan', 'free')
    ).stdout.trim();
    const [row] = await stack.ds.query(`SELECT plan, total_cpu_size FROM compute_resources WHERE uuid = $1`, [free]);
    expect(row.plan).toMatchObject({ plan_type: 'free', code_name: 'free' });
    expect(row.total_cpu_size).toBe(row.plan.cpu_size);
  });

  it('list prints a table of the compute resources with their use', async () => {
    const other = await seedWorkspace(stack.ds);
    await berth(
      'resource',
      'create',
      '--workspace',
      other.name,
      '--name',
      'listed',
      '--region',
      'fra1',
      '--plan',
      'standard',
    );
    const { stdout } = await berth('resource', 'list', '--workspace', other.name);
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^UUID\s+NAME\s+WORKSPACE\s+REGION\s+PLAN\s+STATE\s+CPU \(used\/total\)\s+RAM GiB\s+DISK GiB$/,
    );
    expect(lines).toHaveLength(3); // the fixture's resource and ours
    expect(lines.find((l) => l.includes(' listed '))).toMatch(
      /listed\s+\S+\s+fra1\s+standard\s+active\s+0\/2\s+0\/4\s+0\/40$/,
    );
    expect((await berth('resource', 'list')).stdout).toContain('edge-1');
  });

  it('refuses an unknown region (listing the regions), a taken name, a bad plan or size, with exit codes 1 and 2', async () => {
    const unknown = berth(
      'resource',
      'create',
      '--workspace',
      ws.name,
      '--name',
      'x',
      '--region',
      'mars',
      '--plan',
      'free',
    );
    await expect(unknown).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/no region "mars"; regions: .*fra1 \(Frankfurt\).*local/),
    });
    await berth('resource', 'create', '--workspace', ws.name, '--name', 'twice', '--region', 'fra1', '--plan', 'free');
    await expect(
      berth('resource', 'create', '--workspace', ws.name, '--name', 'twice', '--region', 'fra1', '--plan', 'free'),
    ).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('a compute resource named "twice" already exists'),
    });
    expect(
      (
        await stack.ds.query(
          `SELECT count(*)::int AS n FROM compute_resources WHERE workspace_uuid = $1 AND name = 'twice'`,
          [ws.uuid],
        )
      )[0].n,
    ).toBe(1);
    await expect(
      berth('resource', 'create', '--workspace', ws.name, '--name', 'y', '--region', 'fra1', '--plan', 'gold'),
    ).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('--plan must be one of standard, free') });
    await expect(
      berth(
        'resource',
        'create',
        '--workspace',
        ws.name,
        '--name',
        'y',
        '--region',
        'fra1',
        '--plan',
        'free',
        '--cpu',
        '0',
      ),
    ).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('--cpu must be a positive number') });
    await expect(berth('resource', 'create', '--workspace', ws.name, '--region', 'fra1')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--name, --plan required'),
    });
    await seedWorkspace(stack.ds); // with several workspaces, which one must be said
    await expect(
      berth('resource', 'create', '--name', 'z', '--region', 'fra1', '--plan', 'free'),
    ).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('give --workspace') });
  });

  it('on a fresh installation, `berth migrate` seeds one resource (local-1) and `resource create` needs no --workspace', async () => {
    const fresh = await startStack();
    try {
      const env = { ...process.env, DATABASE_URL: fresh.db.url };
      const cli = (...args: string[]) =>
        run(process.execPath, [path.join(ROOT, 'bin', 'berth.js'), ...args], { env, cwd: ROOT });
      await cli('migrate');
      const seeded = await fresh.ds.query(`SELECT name, labels, total_cpu_size, plan FROM compute_resources`);
      expect(seeded).toEqual([
        {
          name: 'local-1',
          labels: ['embedded'],
          total_cpu_size: 2,
          plan: expect.objectContaining({ plan_type: 'standard', code_name: 'standard-2x4' }),
        },
      ]);
      const uuid = (
        await cli('resource', 'create', '--name', 'second', '--region', 'local', '--plan', 'free')
      ).stdout.trim();
      expect(
        (
          await fresh.ds.query(
            `SELECT w.name FROM compute_resources c JOIN workspaces w ON w.uuid = c.workspace_uuid WHERE c.uuid = $1`,
            [uuid],
          )
        )[0].name,
      ).toBe('default');
      const listed = (await cli('resource', 'list')).stdout;
      expect(listed).toMatch(/local-1\s+default\s+local\s+standard/);
      expect(listed).toMatch(/second\s+default\s+local\s+free\s+active\s+0\/0.5\s+0\/0.5\s+0\/5/);
    } finally {
      await fresh.close();
    }
  });
});
