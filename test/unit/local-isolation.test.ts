import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  applyLimits,
  detectIsolation,
  isolatedCommand,
  removeLimits,
} from '../../activities/provider/local/sandbox/isolation';

const root = process.getuid?.() === 0;
const gcc = spawnSync('gcc', ['--version']).status === 0;
const itRootWithCc = root && gcc ? it : it.skip;

describe("isolated commands with an app's environment", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'berth-iso-'));
    chmodSync(dir, 0o755);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // An app sets LD_PRELOAD to a library of its own: loaded by the root part of the command
  // (the shell that joins the cgroups, setpriv), it would run the app's code as root.
  itRootWithCc("an app's LD_PRELOAD never reaches the root part, and the app still gets it", () => {
    const marker = path.join(dir, 'ran-as-root');
    const source = path.join(dir, 'evil.c');
    writeFileSync(
      source,
      `#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void run(void) {
  if (getuid() == 0) { FILE *f = fopen("${marker}", "w"); if (f) { fputs("root", f); fclose(f); } }
}
`,
    );
    const lib = path.join(dir, 'evil.so');
    execFileSync('gcc', ['-shared', '-fPIC', '-o', lib, source]);
    chmodSync(lib, 0o755);
    const iso = { ...detectIsolation(), cgroups: false };
    const { argv, env } = isolatedCommand(
      iso,
      { owner: { kind: 'app', id: 'iso-test' }, uid: 200_123 },
      ['/bin/sh', '-c', 'echo "preload=$LD_PRELOAD uid=$(id -u)"'],
      { PATH: '/usr/bin:/bin', LD_PRELOAD: lib, GREETING: 'hi' },
    );
    expect(env.LD_PRELOAD).toBeUndefined();
    const out = execFileSync(argv[0]!, argv.slice(1), { env, encoding: 'utf8' });
    expect(out.trim()).toBe(`preload=${lib} uid=200123`);
    expect(existsSync(marker) ? readFileSync(marker, 'utf8') : 'never ran as root').toBe('never ran as root');
  });
});

describe('cgroup limits', () => {
  const iso = detectIsolation();
  const owner = { kind: 'db' as const, id: `limits-test-${process.pid}` };
  const memory = (file: string) =>
    Number(readFileSync(path.join(iso.cgroupRoot, 'memory', 'berth', `db-${owner.id}`, file), 'utf8'));
  afterAll(() => removeLimits(iso, owner));

  // Where the kernel accounts swap, memory.limit_in_bytes may never exceed
  // memory.memsw.limit_in_bytes: a raise written limit first was refused (EINVAL), and a
  // server whose quota grew never started again.
  (iso.cgroups ? it : it.skip)('a memory quota raised and lowered on an existing group takes effect', () => {
    for (const mib of [16, 64, 32]) {
      applyLimits(iso, owner, { memoryBytes: mib * 2 ** 20, cpus: 0.5 });
      expect(memory('memory.limit_in_bytes')).toBe(mib * 2 ** 20);
      if (existsSync(path.join(iso.cgroupRoot, 'memory', 'berth', `db-${owner.id}`, 'memory.memsw.limit_in_bytes')))
        expect(memory('memory.memsw.limit_in_bytes')).toBe(mib * 2 ** 20);
    }
  });
});
