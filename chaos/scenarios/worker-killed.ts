import { SecretBox } from '../../domain/secret-box';
import { startStack } from '../../test/support/stack';
import { RECEIVER_ALLOW, type Receiver } from '../../test/support/webhooks';
import { allArrived, check, deliveriesCompleted, emitEvents, subscribe, verifyHits, type Outcome } from '../common';
import { spawnWorker } from '../worker-process';

const N = 200;
/** The delivery activity's startToCloseTimeout (workflows/webhook-delivery.ts). */
const ACTIVITY_TIMEOUT_MS = 60_000;
/** The receiver holds each answer this long, so attempts are in flight when the worker dies. */
const SLOW_MS = 1_500;

/**
 * SIGKILL `berth worker` (a child process) while 200 deliveries are in flight, start a
 * new one: every event arrives, a webhook-id is delivered twice only with the same body,
 * and an attempt cut by the kill is retried within the activity timeout + 10 s.
 */
export async function workerKilled(receiver: Receiver): Promise<Outcome> {
  const keyring = `k1:${SecretBox.generateKey()}`;
  const stack = await startStack({
    env: { BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW, LOG_LEVEL: 'warn' },
    secretKeyring: keyring,
  });
  const workers = [spawnWorker(stack, keyring)];
  try {
    await workers[0]!.ready;
    receiver.hits.length = 0;
    receiver.respond = () => new Promise((resolve) => setTimeout(() => resolve({ status: 200, body: 'ok' }), SLOW_MS));
    const { ws, secret } = await subscribe(stack, receiver);
    const ids = await emitEvents(stack, ws.uuid, N);
    const waitUntil = Date.now() + 60_000;
    while (receiver.hits.length < N / 4 && Date.now() < waitUntil) await new Promise((r) => setTimeout(r, 20));
    check(receiver.hits.length >= N / 4, `only ${receiver.hits.length} deliveries started within 60 s`);
    const killedAt = Date.now();
    workers[0]!.child.kill('SIGKILL');
    await workers[0]!.exited;
    // Attempts the receiver got but never answered to a live worker: the kill cut them.
    const cut = new Set(
      receiver.hits.filter((h) => h.at > killedAt - SLOW_MS).map((h) => String(h.headers['webhook-id'])),
    );
    const arrivedBeforeKill = new Set(receiver.hits.map((h) => String(h.headers['webhook-id']))).size;
    workers.push(spawnWorker(stack, keyring));
    await workers[1]!.ready;
    const restartedMs = Date.now() - killedAt;
    await allArrived(receiver, ids, ACTIVITY_TIMEOUT_MS + 60_000);
    await deliveriesCompleted(stack, N, 60_000);
    const { distinct, duplicates } = verifyHits(receiver, secret);
    check(distinct === N, `${distinct} distinct webhook-ids for ${N} events`);
    let slowestRetryMs = 0;
    for (const id of cut) {
      const hits = receiver.hitsFor(id);
      if (hits.length < 2) continue; // the answer got through before the kill after all
      slowestRetryMs = Math.max(slowestRetryMs, hits[1]!.at - hits[0]!.at);
    }
    check(slowestRetryMs <= ACTIVITY_TIMEOUT_MS + 10_000, `a cut attempt was retried after ${slowestRetryMs} ms`);
    return {
      figure:
        `${N} events, worker SIGKILLed after ${arrivedBeforeKill} arrived (${cut.size} attempts cut), new worker polling in ${(restartedMs / 1000).toFixed(1)} s: ` +
        `${distinct}/${N} arrived, ${duplicates} duplicates (same webhook-id and body), slowest retry of a cut attempt ${(slowestRetryMs / 1000).toFixed(1)} s`,
    };
  } finally {
    receiver.respond = () => ({ status: 200, body: 'ok' });
    for (const w of workers) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    await stack.close();
  }
}
