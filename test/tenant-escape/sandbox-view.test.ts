import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { detectIsolation, removeLimits } from '../../activities/provider/local/sandbox/isolation';
import { launch } from '../../activities/provider/local/sandbox/launcher';

/**
 * Issue 25 item 5 from the tenant's side: app code, started by the launcher in its view
 * (bubblewrap as the app's uid), has no capabilities, cannot gain privileges, and runs under
 * the seccomp filter: the system calls the container runtimes deny (a new user namespace to
 * regain capabilities in, mounting, keyrings, kernel modules) fail with EPERM.
 */
const iso = detectIsolation();
const ready = iso.uidSwitch && iso.view && existsSync('/usr/bin/unshare');
const describeIf = ready ? describe : describe.skip;
const owner = { kind: 'app' as const, id: `view-escape-${process.pid}` };

/** Runs a shell script as app code; its output and exit code. */
async function asApp(dir: string, script: string): Promise<{ out: string; code: number | null }> {
  const launched = await launch(iso, {
    sandbox: {
      owner,
      uid: 40_321,
      limits: { memoryBytes: 256 * 2 ** 20, cpus: 1 },
      view: { writable: [dir], cwd: dir },
    },
    command: ['/bin/sh', '-c', script],
    cwd: dir,
  });
  let out = '';
  launched.child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  launched.child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const code = await new Promise<number | null>((r) => launched.child.once('close', r));
  return { out, code };
}

describeIf('tenant escape: the sandbox view', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'berth-view-'));
    chmodSync(dir, 0o777);
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
    removeLimits(iso, owner);
  });

  it('app code has no capabilities and no way to gain privileges', async () => {
    const { out } = await asApp(dir, 'grep -E "^(CapEff|CapPrm|NoNewPrivs):" /proc/self/status');
    expect(out).toMatch(/CapPrm:\s+0000000000000000/);
    expect(out).toMatch(/CapEff:\s+0000000000000000/);
    expect(out).toMatch(/NoNewPrivs:\s+1/);
  });

  it('runs under a seccomp filter: a new user namespace and a mount are refused (EPERM)', async () => {
    expect(iso.seccomp).toBeDefined();
    const status = await asApp(dir, 'grep -E "^Seccomp:" /proc/self/status');
    expect(status.out).toMatch(/Seccomp:\s+2/);
    const userns = await asApp(dir, 'unshare --user --map-root-user true');
    expect(userns.code).not.toBe(0);
    expect(userns.out).toMatch(/Operation not permitted/);
    const mount = await asApp(dir, 'unshare --user --mount true; mount -t tmpfs none /tmp');
    expect(mount.code).not.toBe(0);
  });
});
