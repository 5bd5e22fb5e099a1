import { RECEIVER_ALLOW, type Receiver } from '../../test/support/webhooks';
import {
  allArrived,
  check,
  deliveriesCompleted,
  emitEvents,
  onDevTemporal,
  subscribe,
  verifyHits,
  type Outcome,
} from '../common';

const N = 200;
const DOWN_MS = 5_000;

/**
 * The Temporal dev server (with its database file) stopped while 200 deliveries are in
 * flight and started again on the same port: every event arrives, every workflow completes.
 */
export async function temporalRestarted(receiver: Receiver): Promise<Outcome> {
  try {
    return await onDevTemporal({ BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW }, async (stack, temporal) => {
      receiver.respond = () => new Promise((resolve) => setTimeout(() => resolve({ status: 200, body: 'ok' }), 500));
      const { ws, secret } = await subscribe(stack, receiver);
      const ids = await emitEvents(stack, ws.uuid, N);
      while (receiver.hits.length < N / 4) await new Promise((r) => setTimeout(r, 20));
      const before = receiver.hits.length;
      const stoppedAt = Date.now();
      await temporal.stop();
      await new Promise((r) => setTimeout(r, DOWN_MS));
      await temporal.start();
      const downS = (Date.now() - stoppedAt) / 1000;
      const restartedAt = Date.now();
      await allArrived(receiver, ids, 180_000);
      const drainS = (Date.now() - restartedAt) / 1000;
      await deliveriesCompleted(stack, N, 120_000);
      const { distinct, duplicates } = verifyHits(receiver, secret);
      check(distinct === N, `${distinct} distinct webhook-ids for ${N} events`);
      return {
        figure:
          `${N} events, server down ${downS.toFixed(1)} s after ${before} hits: ${distinct}/${N} arrived (last ${drainS.toFixed(1)} s after the restart), ` +
          `${N} delivery workflows completed, ${duplicates} duplicates (same id and body)`,
      };
    });
  } finally {
    receiver.respond = () => ({ status: 200, body: 'ok' });
  }
}
