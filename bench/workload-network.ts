/**
 * `npm run bench:workload-network`: what a network namespace of its own adds to a replica's
 * start (issue 25 item 10: at most 100 ms, median of 20). A replica start is what the
 * supervisor does: `launch` of a process in the app's sandbox (its uid, cgroups, bubblewrap
 * view when the machine has them) that listens on PORT, timed until its port accepts a
 * connection. The same start runs with the workload network and without it, interleaved, in
 * the same run; the script prints both medians and the difference against the goal.
 *
 * Needs root and nftables for the network side. Options (env): BENCH_N (starts each, default 20).
 */
import { mkdtempSync, chmodSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { fabricUnavailable, WorkloadNetwork } from '../activities/provider/local/network/fabric';
import { detectIsolation, removeLimits, type Isolation } from '../activities/provider/local/sandbox/isolation';
import { launch, releaseNetwork, type Address } from '../activities/provider/local/sandbox/launcher';
import { DEFAULT_WORKLOAD_RANGE } from '../platform/workload-addresses';

const N = Number(process.env.BENCH_N ?? 20);
const GOAL_MS = 100;
const SERVER = `require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT))`;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

function accepts(address: Address): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(address.port, address.host);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** One replica start: launched, then polled every 5 ms until it accepts; the milliseconds it took. */
async function startOnce(iso: Isolation, dir: string, name: string | null): Promise<number> {
  const begun = performance.now();
  const launched = await launch(iso, {
    sandbox: {
      owner: { kind: 'app', id: 'bench-network' },
      uid: 40_123,
      limits: { memoryBytes: 256 * 2 ** 20, cpus: 1 },
      view: { writable: [dir], cwd: dir },
      ...(name
        ? {
            network: {
              name,
              member: { workspace: 'bench', app: 'bench', allowConnections: false, clusters: [], serviceName: null },
            },
          }
        : {}),
    },
    command: [process.execPath, '-e', SERVER],
    cwd: dir,
    listens: true,
    port: 8080,
    output: 'ignore',
  });
  while (!(await accepts(launched.address!))) await new Promise((r) => setTimeout(r, 5));
  const took = performance.now() - begun;
  const ended = new Promise((r) => launched.child.once('close', r));
  launched.kill('SIGKILL');
  await ended;
  if (name) await releaseNetwork(iso, name);
  return took;
}

async function main(): Promise<void> {
  const reason = await fabricUnavailable();
  if (reason) throw new Error(`the workload network cannot be built here: ${reason}`);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'berth-bench-net-'));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-bench-app-'));
  chmodSync(dir, 0o777);
  const plain = detectIsolation();
  const network = await WorkloadNetwork.open({
    dataDir,
    range: DEFAULT_WORKLOAD_RANGE,
    logger: pino({ level: 'silent' }),
  });
  const networked: Isolation = { ...plain, network };
  const without: number[] = [];
  const withNet: number[] = [];
  try {
    await startOnce(plain, dir, null); // warm the caches (node, bubblewrap) once
    for (let i = 0; i < N; i++) {
      without.push(await startOnce(plain, dir, null));
      withNet.push(await startOnce(networked, dir, `bench-${i}`));
    }
  } finally {
    await network.close();
    removeLimits(plain, { kind: 'app', id: 'bench-network' });
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  }
  const a = median(without);
  const b = median(withNet);
  console.log(`replica start, median of ${N} (isolation: ${plain.summary})`);
  console.log(`  without a network of its own   ${a.toFixed(1)} ms`);
  console.log(`  with its own namespace          ${b.toFixed(1)} ms   (ratio ${(b / a).toFixed(2)})`);
  console.log(
    `  added by the network            ${(b - a).toFixed(1)} ms   (goal: at most ${GOAL_MS} ms) ${b - a <= GOAL_MS ? 'MET' : 'NOT MET'}`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
