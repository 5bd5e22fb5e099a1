import { randomUUID } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { createActivities } from '../../activities';
import { seedWorkspace } from '../support/fixtures';
import { eventually, expectNoSecretLeaks, startStack, type TestStack } from '../support/stack';
import { insertApp, RECEIVER_ALLOW, startReceiver, type Receiver } from '../support/webhooks';

/**
 * Acceptance on the suite's real Temporal dev server with a real worker: N events each
 * arrive at least once; every webhook-id is distinct per event and stable across the
 * automatic retry (a 500 on the first attempt of every tenth event, retried ~30 s later)
 * and a manual retry; the signing secret never reaches a log line or a workflow history.
 */
const N = 200;
let stack: TestStack;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  stack = await startStack({ env: { BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW } });
  await stack.startWorker();
});
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
});

describe('webhooks end to end', () => {
  it(`WH-15 WH-29 ${N} events each arrive at least once, ids distinct per event and stable across retries; a manual retry reuses it`, async () => {
    const ws = await seedWorkspace(stack.ds);
    const auth = { Authorization: `Bearer ${ws.ownerToken}` };
    const apps = [
      await insertApp(stack.ds, ws.uuid, ws.resourceUuid),
      await insertApp(stack.ds, ws.uuid, ws.resourceUuid),
    ];
    const created = await stack.http
      .post('/api/v1/webhooks')
      .set(auth)
      .send({ url: receiver.url, description: 'e2e' })
      .expect(201);
    const { uuid, secret } = created.body as { uuid: string; secret: string };
    const flaky = new Set<string>();
    receiver.respond = (hit) => {
      const id = String(hit.headers['webhook-id']);
      return flaky.has(id) && receiver.hitsFor(id).length === 1
        ? { status: 500, body: 'first attempt fails' }
        : { status: 200, body: 'ok' };
    };
    const { emitEvent } = createActivities(stack.activityDeps);
    const ids = Array.from({ length: N }, () => randomUUID());
    ids.forEach((id, i) => {
      if (i % 10 === 0) flaky.add(id);
    });
    for (let i = 0; i < N; i += 20) {
      await Promise.all(
        ids.slice(i, i + 20).map((eventId, j) =>
          emitEvent({
            eventId,
            workspaceUuid: ws.uuid,
            type: 'app_state_changed',
            appUuid: apps[(i + j) % 2]!,
            data: { state: 'started' },
          }),
        ),
      );
    }
    await eventually(
      async () =>
        ids.every(
          (id) =>
            receiver.hitsFor(id).some((h) => h.headers['webhook-id'] === id) &&
            receiver.hitsFor(id).length >= (flaky.has(id) ? 2 : 1),
        ),
      { what: 'every event delivered', timeoutMs: 90_000, intervalMs: 500 },
    );
    const verifier = new StandardWebhook(secret);
    for (const id of ids) {
      const hits = receiver.hitsFor(id);
      expect(hits.length).toBeGreaterThanOrEqual(flaky.has(id) ? 2 : 1);
      for (const h of hits) {
        expect(verifier.verify(h.body, h.headers as Record<string, string>)).toMatchObject({
          id,
          type: 'app_state_changed',
        });
      }
      expect(new Set(hits.map((h) => h.body)).size).toBe(1);
    }
    expect(new Set(receiver.hits.map((h) => h.headers['webhook-id'])).size).toBe(N);
    // The delivery rows agree (the last 50 events are kept).
    const listed = await eventually(
      async () => {
        const l = (await stack.http.get(`/api/v1/webhooks/${uuid}/deliveries`).set(auth).expect(200)).body;
        return l.length === 50 && l.every((d: { status: string }) => d.status === 'delivered') ? l : undefined;
      },
      { what: 'history settled' },
    );
    const retried = listed.find((d: { event_id: string }) => flaky.has(d.event_id)) ?? listed[0];
    expect(retried.payload.id).toBe(retried.event_id);
    // A manual retry reuses the original event id.
    const before = receiver.hitsFor(retried.event_id).length;
    await stack.http.post(`/api/v1/webhooks/${uuid}/deliveries/${retried.uuid}/retry`).set(auth).expect(200);
    await eventually(async () => receiver.hitsFor(retried.event_id).length === before + 1, {
      what: 'manual retry arrived',
    });
    const again = receiver.hitsFor(retried.event_id).at(-1)!;
    expect(again.headers['webhook-id']).toBe(retried.event_id);
    expect(JSON.parse(again.body)).toEqual(retried.payload);
    // The secret never entered a workflow history or a log line.
    const key = secret.slice('whsec_'.length);
    for (const id of [ids[0]!, retried.event_id]) {
      const history = JSON.stringify(
        await stack.temporal.workflow.getHandle(`webhook-delivery/${uuid}/${id}`).fetchHistory(),
      );
      expect(history).not.toContain(key);
      expect(history).not.toContain(Buffer.from(key, 'base64').toString('hex'));
    }
    expectNoSecretLeaks(stack, [secret, key], { allowInResponses: [secret, key] });
    expect(stack.responseBodies.filter((b) => b.includes(key))).toHaveLength(1);
  });
});
