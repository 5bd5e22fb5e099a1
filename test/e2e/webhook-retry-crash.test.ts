import request from 'supertest';
import { seedWorkspace } from '../support/fixtures';
import { eventually, startStack, type TestStack } from '../support/stack';
import { RECEIVER_ALLOW, startReceiver, type Receiver } from '../support/webhooks';
import { crashableApi, type CrashableApi } from './support/crashable-api';

/**
 * A manual webhook retry must survive a crash of the API between its commit and the
 * re-queue ("nothing lost"). The API runs in its own process against a Temporal address
 * that accepts connections and never answers, so the retry commits (the delivery is
 * pending) and then hangs on Temporal; the test kills the process there (SIGKILL), then a
 * worker's reconciler must re-queue the delivery, which reaches the receiver again.
 */
let stack: TestStack;
let receiver: Receiver;
let api: CrashableApi;

beforeAll(async () => {
  receiver = await startReceiver();
  stack = await startStack({ env: { BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW } });
  api = await crashableApi(stack);
});
afterAll(async () => {
  await api?.close();
  await stack?.close();
  await receiver?.close();
});

describe('crash between the retry commit and the re-queue', () => {
  it('WH-23 WH-15 a retry whose API process was killed after commit is re-queued by the reconciler and delivered', async () => {
    const ws = await seedWorkspace(stack.ds);
    const auth = { Authorization: `Bearer ${ws.ownerToken}` };
    const first = await stack.startWorker();
    receiver.respond = () => ({ status: 503, body: 'down' });
    const webhook = (await stack.http.post('/api/v1/webhooks').set(auth).send({ url: receiver.url }).expect(201)).body;
    const failed = (await stack.http.post(`/api/v1/webhooks/${webhook.uuid}/test`).set(auth).expect(200)).body;
    expect(failed).toMatchObject({ status: 'failed', attempts: 1 });
    // No worker (and so no reconciler) while the API process dies: the state it leaves is the crash's alone.
    await first.shutdown();
    receiver.respond = () => ({ status: 204 });

    const port = await api.start();
    const answer = request(`http://127.0.0.1:${port}`)
      .post(`/api/v1/webhooks/${webhook.uuid}/deliveries/${failed.uuid}/retry`)
      .set(auth)
      .then(
        () => 'answered',
        () => 'killed',
      );

    // The retry commits (the delivery is pending), then the re-queue hangs on Temporal.
    await eventually(
      async () =>
        (await stack.ds.query(`SELECT status FROM webhook_deliveries WHERE uuid = $1`, [failed.uuid]))[0]?.status ===
        'pending',
      { what: 'committed retry' },
    );
    await new Promise((r) => setTimeout(r, 500)); // whatever the request does after its commit, it cannot get past Temporal
    await api.kill();
    expect(await answer).toBe('killed');
    expect(receiver.hitsFor(failed.event_id)).toHaveLength(1);
    const opOf = async () =>
      (
        await stack.ds.query(`SELECT started_at FROM operations WHERE workflow_id = $1`, [
          `webhook-delivery/${webhook.uuid}/${failed.event_id}`,
        ])
      )[0];
    expect(await opOf()).toEqual({ started_at: null });

    // A worker's reconciler re-queues it under the original event id.
    await stack.startWorker();
    const done = await eventually(
      async () => {
        const d = (
          await stack.http.get(`/api/v1/webhooks/${webhook.uuid}/deliveries/${failed.uuid}`).set(auth).expect(200)
        ).body;
        return d.status === 'delivered' ? d : undefined;
      },
      { what: 'delivery re-delivered after the crash', timeoutMs: 30_000 },
    );
    expect(done).toMatchObject({ event_id: failed.event_id, response_code: 204, attempts: 2 });
    const hits = receiver.hitsFor(failed.event_id);
    expect(hits).toHaveLength(2);
    expect(hits[1]!.body).toBe(hits[0]!.body);
    expect((await opOf()).started_at).not.toBeNull();
    const audit = await stack.ds.query(
      `SELECT 1 FROM audit_events WHERE action = 'webhook_delivery.retry' AND resource_uuid = $1`,
      [failed.uuid],
    );
    expect(audit).toHaveLength(1);
  });
});
