import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { COMPOSE_CPU_SHARES, backgroundCpu } from '../../chaos/background-cpu';

const root = '/sys/fs/cgroup';
const writable =
  process.getuid?.() === 0 && ['cpu', 'cpuset'].every((c) => existsSync(path.join(root, c, 'cgroup.procs')));
const itWithCgroups = writable ? it : it.skip;

/** The process's group in a cgroup v1 controller's hierarchy (`/` for the root). */
const groupOf = (pid: number, controller: string) =>
  readFileSync(`/proc/${pid}/cgroup`, 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find(([, controllers]) => controllers!.split(',').includes(controller))![2];

const cpusAllowed = (pid: number) => /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1];

/** A node process that has started (its V8 and libuv threads made), and a way to end it. */
async function idleNode(): Promise<{ child: ChildProcess; end: () => Promise<void> }> {
  const child = spawn(process.execPath, ['-e', 'console.log("up"); setTimeout(() => {}, 60_000)'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await new Promise((resolve) => child.stdout!.once('data', resolve));
  return {
    child,
    end: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

describe("the benches' background services on the cores (docker-compose.yml's cpu_shares through cgroup v1)", () => {
  itWithCgroups(
    "puts a service's process, every thread, in a group of its own weighed as compose weighs it, and puts it back",
    async () => {
      const { child, end } = await idleNode();
      const background = backgroundCpu();
      try {
        expect(background.refused).toBeUndefined();
        background.place('worker', child.pid!);
        const group = `/berth-bench-${process.pid}-worker`;
        expect(groupOf(child.pid!, 'cpu')).toBe(group);
        // every thread of it (node's V8 and libuv threads), not only the main one
        const threads = readFileSync(path.join(root, 'cpu', group, 'tasks'), 'utf8')
          .trim()
          .split('\n');
        expect(threads.length).toBeGreaterThan(1);
        expect(readFileSync(path.join(root, 'cpu', group, 'cpu.shares'), 'utf8').trim()).toBe(
          String(COMPOSE_CPU_SHARES.worker),
        );
        expect(background.describe()).toBe(
          'CPU shares as docker-compose.yml sets them: worker 256, temporal 256 (the API and the rest 1024)',
        );
        background.close();
        expect(groupOf(child.pid!, 'cpu')).toBe('/');
        for (const service of Object.keys(COMPOSE_CPU_SHARES))
          expect(existsSync(path.join(root, 'cpu', `berth-bench-${process.pid}-${service}`))).toBe(false);
      } finally {
        background.close();
        await end();
      }
    },
  );

  itWithCgroups('given cores, confines the services to them, and frees them again', async () => {
    const { child, end } = await idleNode();
    const before = cpusAllowed(child.pid!);
    const background = backgroundCpu({ cpus: '0' });
    try {
      expect(background.refused).toBeUndefined();
      background.place('temporal', child.pid!);
      expect(cpusAllowed(child.pid!)).toBe('0');
      expect(groupOf(child.pid!, 'cpuset')).toBe(`/berth-bench-${process.pid}-background`);
      expect(background.describe()).toMatch(/; worker and Temporal confined to CPUs 0$/);
      background.close();
      expect(cpusAllowed(child.pid!)).toBe(before);
      expect(existsSync(path.join(root, 'cpuset', `berth-bench-${process.pid}-background`))).toBe(false);
    } finally {
      background.close();
      await end();
    }
  });

  itWithCgroups('refuses cores the machine does not have, naming them, and leaves no group behind', () => {
    const background = backgroundCpu({ cpus: '4095' });
    expect(background.refused).toMatch(/refused the settings \(cores "4095"\)/);
    for (const dir of ['cpu/berth-bench-%-worker', 'cpu/berth-bench-%-temporal', 'cpuset/berth-bench-%-background'])
      expect(existsSync(path.join(root, dir.replace('%', String(process.pid))))).toBe(false);
  });

  it('says why where there is no cgroup v1 cpu controller, and places nothing', () => {
    const background = backgroundCpu({ root: '/nonexistent' });
    expect(background.refused).toMatch(/no writable cgroup v1 cpu controller under \/nonexistent/);
    expect(background.describe()).toMatch(/^WITHOUT compose's CPU weights: /);
    const before = groupOf(process.pid, 'cpu');
    expect(() => background.place('temporal', process.pid)).not.toThrow();
    expect(groupOf(process.pid, 'cpu')).toBe(before);
  });
});
