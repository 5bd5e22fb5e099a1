import { startStack } from '../../test/support/stack';
import { RECEIVER_ALLOW, type Receiver } from '../../test/support/webhooks';
import type { ChaosPostgres } from '../postgres';
import {
  allArrived,
  check,
  deliveriesCompleted,
  emitEvents,
  percentile,
  subscribe,
  verifyHits,
  type Outcome,
} from '../common';

const N = 200;
const DOWN_MS = 10_000;
/** A request must be answered within the pool's connect timeout (5 s) plus this margin. */
const ANSWER_WITHIN_MS = 7_000;

interface Probe {
  at: number;
  status: number;
  ms: number;
}

/**
 * PostgreSQL stopped while 200 deliveries are in flight and started again: the API
 * answers 503 problem bodies while it is down (never a 500, never a hang) and 200 again
 * without restarting Berth; delivery activities retry; every event arrives, none is
 * stored twice; a POST refused during the outage and retried with its Idempotency-Key
 * afterwards creates one resource.
 */
export async function postgresRestarted(receiver: Receiver, pg: ChaosPostgres): Promise<Outcome> {
  const stack = await startStack({ env: { BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW } });
  let probing = true;
  try {
    await stack.startWorker();
    receiver.respond = () => new Promise((resolve) => setTimeout(() => resolve({ status: 200, body: 'ok' }), 500));
    const { ws, auth, secret } = await subscribe(stack, receiver);
    const ids = await emitEvents(stack, ws.uuid, N);
    while (receiver.hits.length < N / 4) await new Promise((r) => setTimeout(r, 20));
    const probes: Probe[] = [];
    const bodies: string[] = [];
    const prober = (async () => {
      while (probing) {
        const t = Date.now();
        const res = await stack.http
          .get('/api/v1/webhooks')
          .set(auth)
          .timeout(30_000)
          .then(
            (r) => r,
            (e: { status?: number }) => ({ status: e.status ?? 0, text: '', headers: {} as Record<string, string> }),
          );
        probes.push({ at: t, status: res.status, ms: Date.now() - t });
        if (res.status === 503) bodies.push(`${res.headers['content-type']} ${res.headers['retry-after']} ${res.text}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const stoppingAt = Date.now();
    await pg.stop();
    const stoppedAt = Date.now();
    await new Promise((r) => setTimeout(r, DOWN_MS / 2));
    const key = `pg-down-${crypto.randomUUID()}`;
    const create = () =>
      stack.http
        .post('/api/v1/webhooks')
        .set({ ...auth, 'Idempotency-Key': key })
        .send({ url: receiver.url, description: 'during the outage' })
        .timeout(30_000);
    const refused = await create();
    await new Promise((r) => setTimeout(r, DOWN_MS / 2));
    const startingAt = Date.now();
    await pg.start();
    const startedAt = Date.now();
    let recoveredAt = 0;
    while (!recoveredAt && Date.now() - startedAt < 30_000) {
      await new Promise((r) => setTimeout(r, 200));
      recoveredAt = probes.find((p) => p.at > startedAt && p.status === 200)?.at ?? 0;
    }
    probing = false;
    await prober;
    const created = await create();
    const again = await create();
    await allArrived(receiver, ids, 180_000);
    await deliveriesCompleted(stack, N, 120_000);
    const { distinct, duplicates } = verifyHits(receiver, secret);
    const [{ events }] = await stack.ds.query(`SELECT count(*)::int AS events FROM events WHERE uuid = ANY($1)`, [ids]);
    const [{ hooks }] = await stack.ds.query(
      `SELECT count(*)::int AS hooks FROM webhooks WHERE workspace_uuid = $1 AND description = 'during the outage'`,
      [ws.uuid],
    );
    const down = probes.filter((p) => p.at >= stoppedAt && p.at + p.ms < startingAt);
    const around = probes.filter((p) => p.at >= stoppingAt && p.at < startedAt);
    const statuses = [...new Set(down.map((p) => p.status))].sort();
    const slowest = Math.max(...around.map((p) => p.ms));
    check(down.length > 0 && statuses.every((s) => s === 503), `answers while down: ${statuses.join(',')}`);
    check(
      around.every((p) => p.status === 200 || p.status === 503),
      `answers while stopping or starting: ${[...new Set(around.map((p) => p.status))].join(',')}`,
    );
    check(
      bodies.every((b) => b.startsWith('application/problem+json') && /^\S+ \d+ /.test(b)),
      `a 503 without problem body or Retry-After: ${bodies.find((b) => !b.startsWith('application/problem+json'))}`,
    );
    check(slowest <= ANSWER_WITHIN_MS, `a request took ${slowest} ms while the database was down`);
    check(recoveredAt > 0, 'the API did not answer 200 within 30 s of the restart');
    check(refused.status === 503, `the POST during the outage answered ${refused.status}`);
    check(
      created.status === 201 && again.status === 201 && again.headers['idempotent-replayed'] === 'true' && hooks === 1,
      `retried POST: ${created.status}, replay ${again.status}, ${hooks} webhooks created`,
    );
    check(distinct === N && events === N, `${distinct} distinct webhook-ids, ${events} event rows for ${N} events`);
    return {
      figure:
        `PostgreSQL down ${((startingAt - stoppedAt) / 1000).toFixed(1)} s: ${down.length} API answers all 503 problem+json with Retry-After ` +
        `(p99 ${percentile(
          down.map((p) => p.ms),
          99,
        )} ms, slowest ${slowest} ms), 200 again ${((recoveredAt - startedAt) / 1000).toFixed(1)} s after the restart; ` +
        `${distinct}/${N} events arrived, ${events} event rows, ${duplicates} duplicate hits (same id and body), a POST refused then retried made ${hooks} resource`,
    };
  } finally {
    probing = false;
    receiver.respond = () => ({ status: 200, body: 'ok' });
    await pg.start();
    await stack.close();
  }
}
