import { createActivities } from '../../activities';
import { webhookDeliveryWorkflowId } from '../../domain/webhooks';
import { eventually, type TestStack } from '../../test/support/stack';
import type { Receiver } from '../../test/support/webhooks';
import { check, subscribe, type Outcome } from '../common';

const N = 50;

/** One event emitted 50 times at once: one event row, one delivery row, one workflow, one hit. */
export async function sameEventConcurrently(stack: TestStack, receiver: Receiver): Promise<Outcome> {
  const { ws, webhookUuid } = await subscribe(stack, receiver);
  const { emitEvent } = createActivities(stack.activityDeps);
  const eventId = crypto.randomUUID();
  const results = await Promise.allSettled(
    Array.from({ length: N }, () =>
      emitEvent({
        eventId,
        workspaceUuid: ws.uuid,
        type: 'quota_alert',
        appUuid: null,
        data: { resource: 'cpu', used: 1, limit: 1 },
      }),
    ),
  );
  const failed = results.filter((r) => r.status === 'rejected');
  check(
    failed.length === 0,
    `${failed.length} of ${N} emits failed: ${String((failed[0] as PromiseRejectedResult | undefined)?.reason)}`,
  );
  await eventually(async () => receiver.hitsFor(eventId).length > 0, {
    timeoutMs: 30_000,
    what: 'the event delivered',
  });
  const workflowId = webhookDeliveryWorkflowId(webhookUuid, eventId);
  await stack.temporal.workflow.getHandle(workflowId).result();
  await new Promise((r) => setTimeout(r, 1_000)); // a second delivery, if any, would arrive by now
  const runs = (await stack.temporal.workflow.count(`WorkflowId = '${workflowId}'`)).count;
  const [{ events }] = await stack.ds.query(`SELECT count(*)::int AS events FROM events WHERE uuid = $1`, [eventId]);
  const [{ deliveries }] = await stack.ds.query(
    `SELECT count(*)::int AS deliveries FROM webhook_deliveries WHERE event_id = $1`,
    [eventId],
  );
  const hits = receiver.hitsFor(eventId).length;
  check(runs === 1, `${runs} delivery workflow runs`);
  check(events === 1 && deliveries === 1, `${events} event rows, ${deliveries} delivery rows`);
  check(hits === 1, `${hits} deliveries reached the receiver`);
  return {
    figure: `one event emitted ${N}x concurrently: ${runs} workflow, ${deliveries} delivery row, ${hits} delivery`,
  };
}

/** 50 concurrent POSTs with one Idempotency-Key: one webhook created, every answer the same. */
export async function sameIdempotencyKeyConcurrently(stack: TestStack, receiver: Receiver): Promise<Outcome> {
  const { ws, auth } = await subscribe(stack, receiver);
  const key = `race-${crypto.randomUUID()}`;
  const before = (
    await stack.ds.query(`SELECT count(*)::int AS n FROM webhooks WHERE workspace_uuid = $1`, [ws.uuid])
  )[0].n as number;
  const answers = await Promise.all(
    Array.from({ length: N }, () =>
      stack.http
        .post('/api/v1/webhooks')
        .set({ ...auth, 'Idempotency-Key': key })
        .send({ url: receiver.url, description: 'race' }),
    ),
  );
  const statuses = new Set(answers.map((a) => a.status));
  const uuids = new Set(answers.map((a) => a.body.uuid));
  const replayed = answers.filter((a) => a.headers['idempotent-replayed'] === 'true').length;
  const after = (
    await stack.ds.query(`SELECT count(*)::int AS n FROM webhooks WHERE workspace_uuid = $1`, [ws.uuid])
  )[0].n as number;
  check(after - before === 1, `${after - before} webhooks created`);
  check(statuses.size === 1 && statuses.has(201), `statuses ${[...statuses].join(',')}`);
  check(uuids.size === 1, `${uuids.size} distinct webhook uuids answered`);
  check(replayed === N - 1, `${replayed} answers replayed`);
  return {
    figure: `${N} concurrent POSTs, one Idempotency-Key: ${after - before} resource, ${uuids.size} uuid in ${N} answers (${replayed} replayed)`,
  };
}
