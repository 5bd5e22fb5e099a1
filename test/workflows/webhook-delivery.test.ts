import { randomUUID } from 'node:crypto';
import { tsToMs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import { createActivities, type ActivityDeps } from '../../activities';
import type { EmitEventInput } from '../../activities/events';
import { BerthOperation, BerthResource, BerthWorkspace } from '../../domain/search-attributes';
import { WEBHOOK_RETRY_DELAYS_MS, WEBHOOK_RETRY_JITTER, webhookAttemptOffsetMs } from '../../domain/webhooks';
import { memberWith, seedWorkspace, type Workspace } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';
import { timeSkipping, type TimeSkipping } from '../support/temporal';
import {
  RECEIVER_ALLOW,
  startReceiver,
  startSmtpReceiver,
  type Receiver,
  type SmtpReceiver,
} from '../support/webhooks';

/**
 * The delivery schedule on the time-skipping test server with the real activities: an
 * always-500 receiver (real HTTP on 127.0.0.2), mail to a real SMTP receiver.
 */
let stack: TestStack;
let ts: TimeSkipping;
let receiver: Receiver;
let smtp: SmtpReceiver;
let deps: ActivityDeps;
let emitEvent: (input: EmitEventInput) => Promise<unknown>;

beforeAll(async () => {
  receiver = await startReceiver();
  smtp = await startSmtpReceiver();
  stack = await startStack({ env: { BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW, BERTH_SMTP_URL: smtp.url } });
  deps = stack.activityDeps;
  ts = await timeSkipping(deps);
  // Outside a worker the fan-out starts delivery workflows on config.taskQueue: point it at the time-skipping queue.
  emitEvent = createActivities({
    ...deps,
    temporal: ts.client,
    config: { ...deps.config, taskQueue: ts.taskQueue },
  }).emitEvent;
});
afterAll(async () => {
  await ts?.close();
  await stack?.close();
  await receiver?.close();
  await smtp?.close();
});

async function hook(ws: Workspace): Promise<{ uuid: string; path: string }> {
  const path = `/hook/${randomUUID().slice(0, 8)}`;
  const res = await stack.http
    .post('/api/v1/webhooks')
    .set('Authorization', `Bearer ${ws.ownerToken}`)
    .send({ url: `http://127.0.0.2:${receiver.port}${path}`, events: ['quota_alert'] })
    .expect(201);
  return { uuid: res.body.uuid, path };
}

/** Emits a quota_alert and waits (time skipping) for its delivery to the webhook to finish. */
async function deliverOne(
  ws: Workspace,
  webhookUuid: string,
): Promise<{ eventId: string; outcome: string; history: temporal.api.history.v1.IHistory }> {
  const eventId = randomUUID();
  await emitEvent({ eventId, workspaceUuid: ws.uuid, type: 'quota_alert', appUuid: null, data: {} });
  const handle = ts.client.workflow.getHandle(`webhook-delivery/${webhookUuid}/${eventId}`);
  const outcome = await handle.result();
  return { eventId, outcome, history: await handle.fetchHistory() };
}

const delivery = async (webhookUuid: string, eventId: string) =>
  (
    await stack.ds.query(
      `SELECT status, attempts, response_code, message, created_at, last_attempt_at FROM webhook_deliveries WHERE webhook_uuid = $1 AND event_id = $2`,
      [webhookUuid, eventId],
    )
  )[0];
const webhook = async (uuid: string) =>
  (await stack.ds.query(`SELECT enabled, consecutive_failures FROM webhooks WHERE uuid = $1`, [uuid]))[0];

function attemptTimes(history: temporal.api.history.v1.IHistory): number[] {
  return history
    .events!.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'attemptWebhookDelivery')
    .map((e) => tsToMs(e.eventTime));
}
function timerDelays(history: temporal.api.history.v1.IHistory): number[] {
  return history
    .events!.filter((e) => e.timerStartedEventAttributes)
    .map((e) => tsToMs(e.timerStartedEventAttributes!.startToFireTimeout as never));
}

describe('webhookDelivery workflow', () => {
  it('WH-11 a non-2xx is retried: exactly 9 attempts at 30 s, 2 m, 8 m, 30 m, 1 h, 3 h, 8 h, 12 h (within jitter), then failed', async () => {
    receiver.respond = (hit) => ({ status: hit.path.startsWith('/hook/') ? 500 : 200, body: 'always 500' });
    const ws = await seedWorkspace(stack.ds);
    const w = await hook(ws);
    const { eventId, outcome, history } = await ts.withWorker(() => deliverOne(ws, w.uuid));
    expect(outcome).toBe('failed');
    expect(receiver.hits.filter((h) => h.path === w.path && h.headers['webhook-id'] === eventId)).toHaveLength(9);
    const delays = timerDelays(history);
    expect(delays).toHaveLength(8);
    delays.forEach((d, i) => {
      expect(d).toBeGreaterThanOrEqual(WEBHOOK_RETRY_DELAYS_MS[i]! * (1 - WEBHOOK_RETRY_JITTER));
      expect(d).toBeLessThanOrEqual(WEBHOOK_RETRY_DELAYS_MS[i]! * (1 + WEBHOOK_RETRY_JITTER));
    });
    expect(new Set(delays.map((d, i) => d / WEBHOOK_RETRY_DELAYS_MS[i]!)).size).toBeGreaterThan(1); // jittered, not fixed
    const times = attemptTimes(history);
    expect(times).toHaveLength(9);
    times.forEach((t, i) => {
      const offset = t - times[0]!;
      const nominal = webhookAttemptOffsetMs(i + 1);
      expect(offset).toBeGreaterThanOrEqual(nominal * (1 - WEBHOOK_RETRY_JITTER));
      expect(offset).toBeLessThanOrEqual(nominal * (1 + WEBHOOK_RETRY_JITTER) + 60_000);
    });
    expect(times[8]! - times[0]!).toBeGreaterThan(23 * 3600_000);
    const row = await delivery(w.uuid, eventId);
    expect(row).toMatchObject({ status: 'failed', attempts: 9, response_code: 500, message: 'always 500' });
    expect(await webhook(w.uuid)).toEqual({ enabled: true, consecutive_failures: 1 });
    const description = await ts.client.workflow.getHandle(`webhook-delivery/${w.uuid}/${eventId}`).describe();
    expect(description.typedSearchAttributes.get(BerthWorkspace)).toBe(ws.uuid);
    expect(description.typedSearchAttributes.get(BerthResource)).toBe(w.uuid);
    expect(description.typedSearchAttributes.get(BerthOperation)).toBe('webhook-delivery');
  });

  it('WH-15 WH-16 WH-31 retries then success: one row updated in place, the same webhook-id and body on every attempt', async () => {
    const ws = await seedWorkspace(stack.ds);
    const w = await hook(ws);
    receiver.respond = (hit) => {
      const seen = receiver.hits.filter(
        (h) => h.path === hit.path && h.headers['webhook-id'] === hit.headers['webhook-id'],
      ).length;
      return seen <= 2 ? { status: 502, body: 'bad gateway' } : { status: 200, body: 'thanks' };
    };
    const { eventId, outcome, history } = await ts.withWorker(() => deliverOne(ws, w.uuid));
    expect(outcome).toBe('delivered');
    const hits = receiver.hits.filter((h) => h.path === w.path);
    expect(hits.map((h) => h.headers['webhook-id'])).toEqual([eventId, eventId, eventId]);
    expect(new Set(hits.map((h) => h.body)).size).toBe(1);
    expect(timerDelays(history)).toHaveLength(2);
    const rows = await stack.ds.query(
      `SELECT status, attempts, response_code, message, created_at, last_attempt_at FROM webhook_deliveries WHERE webhook_uuid = $1`,
      [w.uuid],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'delivered', attempts: 3, response_code: 200, message: 'thanks' });
    expect(rows[0].last_attempt_at.getTime()).toBeGreaterThanOrEqual(rows[0].created_at.getTime());
  });

  it('WH-12 three deliveries that exhaust their retries disable the webhook and e-mail the workspace admins once; history is kept', async () => {
    receiver.respond = () => ({ status: 500, body: 'down' });
    const ws = await seedWorkspace(stack.ds);
    const admin = await memberWith(stack.ds, ws.uuid, 'admin');
    await memberWith(stack.ds, ws.uuid, 'deployer', ['apps:deploy', 'workspace:general']);
    const [owner] = await stack.ds.query(`SELECT email FROM users WHERE uuid = $1`, [ws.ownerUserUuid]);
    const [adminUser] = await stack.ds.query(`SELECT email FROM users WHERE uuid = $1`, [admin.userUuid]);
    const w = await hook(ws);
    const mailsBefore = smtp.messages.length;
    const results = await ts.withWorker(async () => {
      const first = await deliverOne(ws, w.uuid);
      expect(await webhook(w.uuid)).toEqual({ enabled: true, consecutive_failures: 1 });
      const second = await deliverOne(ws, w.uuid);
      expect(await webhook(w.uuid)).toEqual({ enabled: true, consecutive_failures: 2 });
      const third = await deliverOne(ws, w.uuid);
      return [first, second, third];
    });
    expect(results.map((r) => r.outcome)).toEqual(['failed', 'failed', 'failed']);
    expect(await webhook(w.uuid)).toEqual({ enabled: false, consecutive_failures: 3 });
    const mails = smtp.messages.slice(mailsBefore);
    expect(mails).toHaveLength(1);
    expect(mails[0]!.to).toEqual([owner.email, adminUser.email].sort());
    expect(mails[0]!.subject).toMatch(/Webhook disabled after 3 failed deliveries/);
    expect(mails[0]!.raw).toContain(w.uuid);
    const shown = await stack.http
      .get(`/api/v1/webhooks/${w.uuid}/deliveries`)
      .set('Authorization', `Bearer ${ws.ownerToken}`)
      .expect(200);
    expect(shown.body.map((d: { event_id: string; status: string }) => [d.event_id, d.status])).toEqual(
      results.map((r) => [r.eventId, 'failed']).reverse(),
    );
    // Disabled: the next event makes no delivery at all.
    const eventId = randomUUID();
    await emitEvent({ eventId, workspaceUuid: ws.uuid, type: 'quota_alert', appUuid: null, data: {} });
    expect(await delivery(w.uuid, eventId)).toBeUndefined();
    // Re-enabling resets the count; deliveries resume with the next event.
    await stack.http
      .put(`/api/v1/webhooks/${w.uuid}`)
      .set('Authorization', `Bearer ${ws.ownerToken}`)
      .send({ enabled: true })
      .expect(200);
    expect(await webhook(w.uuid)).toEqual({ enabled: true, consecutive_failures: 0 });
  });

  it('WH-13 a success between failed deliveries resets the count, so two failures, a success and a failure do not disable', async () => {
    const ws = await seedWorkspace(stack.ds);
    const w = await hook(ws);
    let mode = 500;
    receiver.respond = () => ({ status: mode });
    const outcomes = await ts.withWorker(async () => {
      const out: string[] = [];
      out.push((await deliverOne(ws, w.uuid)).outcome);
      out.push((await deliverOne(ws, w.uuid)).outcome);
      expect((await webhook(w.uuid)).consecutive_failures).toBe(2);
      mode = 200;
      out.push((await deliverOne(ws, w.uuid)).outcome);
      expect((await webhook(w.uuid)).consecutive_failures).toBe(0);
      mode = 500;
      out.push((await deliverOne(ws, w.uuid)).outcome);
      return out;
    });
    expect(outcomes).toEqual(['failed', 'failed', 'delivered', 'failed']);
    expect(await webhook(w.uuid)).toEqual({ enabled: true, consecutive_failures: 1 });
  });
});
