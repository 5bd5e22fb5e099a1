/**
 * `npm run bench`: every benchmark in turn (their own output passes through), then one
 * summary line each: its ratio against the baseline it measured in the same run, and the
 * figures its goal names. A benchmark that fails says so in its line; the exit code is 1.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

const TSX = path.join(__dirname, '..', 'node_modules', '.bin', 'tsx');

/** Each benchmark, and how its summary is read off its output (the lines, in order, joined). */
const BENCHES: Array<{ name: string; file: string; summary: Array<[RegExp, (m: RegExpMatchArray) => string]> }> = [
  {
    name: 'bench:api',
    file: 'api.ts',
    summary: [[/Berth\/bare: (\S+)/, (m) => `GET /apps/{uuid} Berth/bare ${m[1]} (median of rounds; goal >= 0.6)`]],
  },
  {
    name: 'bench:webhooks',
    file: 'webhooks/throughput.ts',
    summary: [
      [/ratio delivered\/baseline\s+(\S+)/, (m) => `delivered/no-op workflows ${m[1]} (goal >= 0.8)`],
      [/emit -> first attempt p50\s+(\S+ ms)/, (m) => `, emit -> first attempt p50 ${m[1]}`],
      [/emit -> first attempt p99\s+(\S+ ms)/, (m) => ` p99 ${m[1]} (goal <= 100 / 500 ms)`],
    ],
  },
  {
    name: 'bench:webhooks:waiting',
    file: 'webhooks/waiting.ts',
    summary: [
      [/created (\d+) deliveries waiting in retry timers in (\S+ s)/, (m) => `${m[1]} waiting, created in ${m[2]}`],
      [/worker RSS waiting peak (\S+ MB)/, (m) => `: worker RSS peak ${m[1]} (goal <= 300 MB)`],
      [/API p99 waiting\/baseline (\S+)/, (m) => `, API p99 waiting/baseline ${m[1]} (goal: unchanged)`],
    ],
  },
  {
    name: 'bench:ingress',
    file: 'ingress.ts',
    summary: [
      [
        /median of the rounds' ratios: (\S+)/,
        (m) => `through the local ingress/straight ${m[1]} (median of rounds; goal >= 0.7)`,
      ],
    ],
  },
  {
    name: 'bench:addons',
    file: 'addons.ts',
    summary: [
      [/create -> healthy\s+(.*)$/m, (m) => `local postgres add-on create -> healthy ${m[1]!.replace(/\s+/g, ' ')}`],
    ],
  },
  {
    name: 'bench:images',
    file: 'images.ts',
    summary: [
      [/image app .*median (\S+ s)/, (m) => `local image app create -> serving median ${m[1]}`],
      [/process app .*median (\S+ s)/, (m) => `, process app ${m[1]}`],
      [/ratio image\/process (\S+)/, (m) => ` (image/process ${m[1]})`],
    ],
  },
  {
    name: 'bench:temporal-memory',
    file: 'temporal-memory.ts',
    summary: [
      [/growth per 1,000 workflows: (.*)$/m, (m) => `Temporal dev server PSS per 1,000 workflows: ${m[1]}`],
      [/ratio bounded\/default (\S+)/, (m) => ` (bounded/default ${m[1]}; goal < 0.5)`],
    ],
  },
];

function runOne(file: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(TSX, [path.join(__dirname, file)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString();
      process.stdout.write(d);
    });
    child.once('exit', (code) => resolve({ code, output }));
  });
}

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const summary: string[] = [];
  for (const bench of BENCHES.filter((b) => only.length === 0 || only.includes(b.name))) {
    process.stdout.write(`\n=== ${bench.name}\n`);
    const started = Date.now();
    const { code, output } = await runOne(bench.file);
    const parts = bench.summary
      .map(([re, show]) => {
        const m = re.exec(output);
        return m ? show(m) : '';
      })
      .join('');
    const took = `${((Date.now() - started) / 1000).toFixed(0)} s`;
    if (code !== 0 || !parts) process.exitCode = 1;
    summary.push(
      `${bench.name.padEnd(22)} ${code === 0 && parts ? parts : `FAILED (exit ${code}) ${parts}`} [${took}]`,
    );
  }
  process.stdout.write(`\n=== summary\n${summary.join('\n')}\n`);
}

void main();
