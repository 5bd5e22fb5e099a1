import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { COMPOSE_CPU_SHARES, composeCpuShares } from '../../chaos/cpu-shares';

const controller = '/sys/fs/cgroup/cpu';
const writable = process.getuid?.() === 0 && existsSync(path.join(controller, 'cgroup.procs'));
const itWithCgroups = writable ? it : it.skip;

/** The process's group in the cgroup v1 cpu hierarchy (`/` for the root). */
const cpuGroupOf = (pid: number) =>
  readFileSync(`/proc/${pid}/cgroup`, 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find(([, controllers]) => controllers!.split(',').includes('cpu'))![2];

describe("the benches' CPU shares (docker-compose.yml's cpu_shares through cgroup v1)", () => {
  itWithCgroups(
    "puts a background service's process, every thread, in a group of its own weighed as compose weighs it, and puts it back",
    async () => {
      const child = spawn(process.execPath, ['-e', 'console.log("up"); setTimeout(() => {}, 60_000)'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      await new Promise((resolve) => child.stdout!.once('data', resolve)); // node runs, its threads made
      const shares = composeCpuShares();
      try {
        expect(shares.refused).toBeUndefined();
        shares.place('worker', child.pid!);
        const group = `/berth-bench-${process.pid}-worker`;
        expect(cpuGroupOf(child.pid!)).toBe(group);
        // every thread of it (node's V8 and libuv threads), not only the main one
        const threads = readFileSync(path.join(controller, group, 'tasks'), 'utf8')
          .trim()
          .split('\n');
        expect(threads.length).toBeGreaterThan(1);
        expect(readFileSync(path.join(controller, group, 'cpu.shares'), 'utf8').trim()).toBe(
          String(COMPOSE_CPU_SHARES.worker),
        );
        shares.close();
        expect(cpuGroupOf(child.pid!)).toBe('/');
        for (const service of Object.keys(COMPOSE_CPU_SHARES))
          expect(existsSync(path.join(controller, `berth-bench-${process.pid}-${service}`))).toBe(false);
      } finally {
        shares.close();
        child.kill('SIGKILL');
        await exited;
      }
    },
  );

  it('says why where there is no cgroup v1 cpu controller, and places nothing', () => {
    const shares = composeCpuShares('/nonexistent/cpu');
    expect(shares.refused).toMatch(/no writable cgroup v1 cpu controller at \/nonexistent\/cpu/);
    const before = cpuGroupOf(process.pid);
    expect(() => shares.place('temporal', process.pid)).not.toThrow();
    expect(cpuGroupOf(process.pid)).toBe(before);
  });
});
