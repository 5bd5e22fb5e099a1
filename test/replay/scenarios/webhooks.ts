import { randomUUID } from 'node:crypto';
import { createActivities } from '../../../activities';
import { seedWorkspace } from '../../support/fixtures';
import type { TestStack } from '../../support/stack';
import { timeSkipping } from '../../support/temporal';
import { RECEIVER_ALLOW, startReceiver, type Receiver } from '../../support/webhooks';
import type { History, ReplayScenario } from './types';

/** A webhook for quota_alert on a fresh workspace, delivering to the receiver. */
async function setUp(stack: TestStack, receiver: Receiver, consecutiveFailures = 0) {
  const ws = await seedWorkspace(stack.ds);
  const res = await stack.http
    .post('/api/v1/webhooks')
    .set('Authorization', `Bearer ${ws.ownerToken}`)
    .send({ url: receiver.url, events: ['quota_alert'] });
  if (res.status !== 201) throw new Error(`webhook create failed: ${res.status} ${res.text}`);
  await stack.ds.query(`UPDATE webhooks SET consecutive_failures = $2 WHERE uuid = $1`, [
    res.body.uuid,
    consecutiveFailures,
  ]);
  return { ws, webhookUuid: res.body.uuid as string };
}

/** Runs `fn` with the receiver's address allowed (the recorder's stack has no allow-list of its own). */
async function withReceiver<T>(
  stack: TestStack,
  respond: Receiver['respond'],
  fn: (receiver: Receiver) => Promise<T>,
): Promise<T> {
  const receiver = await startReceiver(respond);
  const saved = stack.config.webhookAllowCidrs;
  stack.config.webhookAllowCidrs = [RECEIVER_ALLOW];
  try {
    return await fn(receiver);
  } finally {
    stack.config.webhookAllowCidrs = saved;
    await receiver.close();
  }
}

/** On the time-skipping server: one quota_alert delivered against the receiver. */
async function timeSkipped(
  stack: TestStack,
  respond: Receiver['respond'],
  consecutiveFailures: number,
): Promise<History> {
  return withReceiver(stack, respond, async (receiver) => {
    const { ws, webhookUuid } = await setUp(stack, receiver, consecutiveFailures);
    const ts = await timeSkipping(stack.activityDeps);
    try {
      const { emitEvent } = createActivities({
        ...stack.activityDeps,
        temporal: ts.client,
        config: { ...stack.config, taskQueue: ts.taskQueue },
      });
      return await ts.withWorker(async () => {
        const eventId = randomUUID();
        await emitEvent({ eventId, workspaceUuid: ws.uuid, type: 'quota_alert', appUuid: null, data: {} });
        const handle = ts.client.workflow.getHandle(`webhook-delivery/${webhookUuid}/${eventId}`);
        await handle.result();
        return handle.fetchHistory();
      });
    } finally {
      await ts.close();
    }
  });
}

export const webhookScenarios: ReplayScenario[] = [
  {
    name: 'webhook-delivery-success',
    async record(stack) {
      return withReceiver(
        stack,
        () => ({ status: 200 }),
        async (receiver) => {
          const { ws, webhookUuid } = await setUp(stack, receiver);
          const eventId = randomUUID();
          await createActivities(stack.activityDeps).emitEvent({
            eventId,
            workspaceUuid: ws.uuid,
            type: 'quota_alert',
            appUuid: null,
            data: {},
          });
          const handle = stack.temporal.workflow.getHandle(`webhook-delivery/${webhookUuid}/${eventId}`);
          if ((await handle.result()) !== 'delivered') throw new Error('expected a delivery');
          return handle.fetchHistory();
        },
      );
    },
  },
  {
    // Two 502s, then a 200: two timers, three attempts.
    name: 'webhook-delivery-retries-then-success',
    record: (stack) => timeSkipped(stack, (_hit, i) => (i < 2 ? { status: 502 } : { status: 200 }), 0),
  },
  {
    // Always 500 on a webhook with two failed deliveries already: nine attempts, failed, disabled, admins mailed.
    name: 'webhook-delivery-exhausted',
    record: (stack) => timeSkipped(stack, () => ({ status: 500 }), 2),
  },
];
