import type { TestStack } from '../../test/support/stack';
import type { Receiver } from '../../test/support/webhooks';
import { allArrived, check, deliveriesCompleted, emitEvents, subscribe, verifyHits, type Outcome } from '../common';

/**
 * CHAOS_EVENTS (default 10,000) events to an always-2xx receiver: as many distinct
 * webhook-ids, every signature verified with the independent standardwebhooks library,
 * every delivery workflow completed.
 */
export async function manyEvents(stack: TestStack, receiver: Receiver): Promise<Outcome> {
  const count = Number(process.env.CHAOS_EVENTS ?? 10_000);
  const { ws, secret } = await subscribe(stack, receiver);
  const started = Date.now();
  const ids = await emitEvents(stack, ws.uuid, count, 50);
  const emittedS = (Date.now() - started) / 1000;
  await allArrived(receiver, ids, 25 * 60_000);
  const arrivedS = (Date.now() - started) / 1000;
  await deliveriesCompleted(stack, count, 5 * 60_000);
  const { distinct, verified, duplicates } = verifyHits(receiver, secret);
  check(distinct === count, `${distinct} distinct webhook-ids for ${count} events`);
  return {
    figure:
      `${count} events emitted in ${emittedS.toFixed(0)} s, all arrived in ${arrivedS.toFixed(0)} s (${(count / arrivedS).toFixed(1)}/s): ` +
      `${distinct} distinct ids, ${verified} signatures verified (standardwebhooks), ${duplicates} duplicates`,
  };
}
