import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { createActivities } from '../activities';
import { startTemporalDevServer, type TemporalDevServer } from '../bin/temporal-server';
import { WEBHOOK_DELIVERY_WORKFLOW } from '../domain/webhooks';
import { seedWorkspace, type Workspace } from '../test/support/fixtures';
import { TEST_ENV, testEnv } from '../test/support/env';
import { freePort } from '../test/support/ports';
import { eventually, startStack, type TestStack } from '../test/support/stack';
import type { Hit, Receiver } from '../test/support/webhooks';

/** What a scenario proves, in one line of figures; it throws when a check fails. */
export interface Outcome {
  figure: string;
}

export class ScenarioFailed extends Error {}

export function check(ok: boolean, what: string): void {
  if (!ok) throw new ScenarioFailed(what);
}

export interface Subscribed {
  ws: Workspace;
  auth: { Authorization: string };
  webhookUuid: string;
  secret: string;
}

/** A workspace with one webhook (every event type) to the receiver, created through the API. */
export async function subscribe(stack: TestStack, receiver: Receiver): Promise<Subscribed> {
  const ws = await seedWorkspace(stack.ds);
  const auth = { Authorization: `Bearer ${ws.ownerToken}` };
  const res = await stack.http.post('/api/v1/webhooks').set(auth).send({ url: receiver.url, description: 'chaos' });
  check(res.status === 201, `webhook create answered ${res.status} ${res.text}`);
  const secret = res.body.secret as string;
  const verifier = new StandardWebhook(secret);
  const answer = receiver.respond;
  receiver.respond = (hit, index) => {
    verdicts.set(hit, verify(verifier, hit));
    return answer(hit, index);
  };
  return { ws, auth, webhookUuid: res.body.uuid as string, secret };
}

/**
 * Signatures are verified as each request arrives, as a receiver does: the library
 * refuses timestamps older than 5 minutes, and a long run checks its hits at the end.
 */
const verdicts = new WeakMap<Hit, string>();

function verify(verifier: StandardWebhook, hit: Hit): string {
  try {
    const payload = verifier.verify(hit.body, hit.headers as Record<string, string>) as { id: string };
    return payload.id === hit.headers['webhook-id']
      ? 'ok'
      : `payload id ${payload.id} differs from webhook-id ${String(hit.headers['webhook-id'])}`;
  } catch (err) {
    return `signature of ${String(hit.headers['webhook-id'])} does not verify: ${String(err)}`;
  }
}

/**
 * Emits `count` quota_alert events through the one emit path (the emitEvent activity:
 * events row, delivery rows, one delivery workflow each), `concurrency` at a time.
 */
export async function emitEvents(
  stack: TestStack,
  workspaceUuid: string,
  count: number,
  concurrency = 20,
): Promise<string[]> {
  const { emitEvent } = createActivities(stack.activityDeps);
  const ids = Array.from({ length: count }, () => randomUUID());
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) {
        const eventId = ids[next++]!;
        await emitEvent({
          eventId,
          workspaceUuid,
          type: 'quota_alert',
          appUuid: null,
          data: { resource: 'cpu', used: 1, limit: 1 },
        });
      }
    }),
  );
  return ids;
}

/** Waits until every id reached the receiver at least once; returns the milliseconds it took. */
export async function allArrived(receiver: Receiver, ids: readonly string[], timeoutMs: number): Promise<number> {
  const started = Date.now();
  const pending = new Set(ids);
  let seen = 0;
  let reported = started;
  await eventually(
    async () => {
      for (; seen < receiver.hits.length; seen++) pending.delete(String(receiver.hits[seen]!.headers['webhook-id']));
      if (Date.now() - reported > 30_000) {
        reported = Date.now();
        process.stderr.write(`[chaos] ${ids.length - pending.size}/${ids.length} events arrived\n`);
      }
      return pending.size === 0;
    },
    { timeoutMs, intervalMs: 250, what: `every event delivered (${pending.size} of ${ids.length} missing)` },
  ).catch(() => {
    throw new ScenarioFailed(`${pending.size} of ${ids.length} events never arrived within ${timeoutMs / 1000} s`);
  });
  return Date.now() - started;
}

/**
 * Every hit verified, on arrival, with the independent standardwebhooks library and
 * carries its own id in the body; the same webhook-id always carries the same body.
 * Returns the number of duplicate hits (same webhook-id delivered more than once).
 */
export function verifyHits(
  receiver: Receiver,
  secret: string,
): { verified: number; duplicates: number; distinct: number } {
  const verifier = new StandardWebhook(secret);
  const bodies = new Map<string, string>();
  let duplicates = 0;
  for (const h of receiver.hits) {
    const id = String(h.headers['webhook-id']);
    const verdict = verdicts.get(h) ?? verify(verifier, h);
    check(verdict === 'ok', verdict);
    const earlier = bodies.get(id);
    if (earlier !== undefined) {
      duplicates++;
      check(earlier === h.body, `webhook-id ${id} delivered with two different bodies`);
    } else bodies.set(id, h.body);
  }
  return { verified: receiver.hits.length, duplicates, distinct: bodies.size };
}

/**
 * Every delivery workflow on the stack's task queue completed (none failed, none still
 * running), and there are `count` of them: one per event, none started twice.
 */
export async function deliveriesCompleted(stack: TestStack, count: number, timeoutMs: number): Promise<void> {
  const base = `TaskQueue = '${stack.taskQueue}' AND WorkflowType = '${WEBHOOK_DELIVERY_WORKFLOW}'`;
  let figures = { completed: 0, other: 0 };
  await eventually(
    async () => {
      const completed = (await stack.temporal.workflow.count(`${base} AND ExecutionStatus = 'Completed'`)).count;
      const other = (await stack.temporal.workflow.count(`${base} AND ExecutionStatus != 'Completed'`)).count;
      figures = { completed, other };
      return completed >= count && other === 0;
    },
    { timeoutMs, intervalMs: 1000 },
  ).catch(() => {
    throw new ScenarioFailed(
      `delivery workflows: ${figures.completed} completed, ${figures.other} not, of ${count} within ${timeoutMs / 1000} s`,
    );
  });
  check(figures.completed === count, `${figures.completed} delivery workflows completed for ${count} events`);
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** A Temporal dev server on a database file (what `berth dev` runs), restartable on its port. */
export interface DevTemporal {
  readonly server: TemporalDevServer | null;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/**
 * Runs `fn` on a stack whose Temporal is a dev server with its database file, as `npm start`
 * has (not the suite's in-memory time-skipping server), with an in-process worker.
 */
export async function onDevTemporal<T>(
  env: NodeJS.ProcessEnv,
  fn: (stack: TestStack, temporal: DevTemporal) => Promise<T>,
): Promise<T> {
  const dir = mkdtempSync(path.join(tmpdir(), 'berth-chaos-temporal-'));
  const port = await freePort();
  const launch = () =>
    startTemporalDevServer({
      executable: { type: 'existing-path', path: testEnv('cli') },
      port,
      dbFilename: path.join(dir, 'temporal.db'),
    });
  let server: TemporalDevServer | null = await launch();
  const temporal: DevTemporal = {
    get server() {
      return server;
    },
    async stop() {
      await server?.stop();
      server = null;
    },
    async start() {
      server ??= await launch();
    },
  };
  const suiteAddress = process.env[TEST_ENV.temporalAddress];
  process.env[TEST_ENV.temporalAddress] = server.address;
  let stack: TestStack | undefined;
  try {
    stack = await startStack({ env }).finally(() => {
      process.env[TEST_ENV.temporalAddress] = suiteAddress;
    });
    await stack.startWorker();
    return await fn(stack, temporal);
  } finally {
    if (!server) await temporal.start().catch(() => undefined);
    await stack?.close();
    await temporal.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
