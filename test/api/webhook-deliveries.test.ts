import { randomUUID } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { createActivities } from '../../activities';
import type { EmitEventInput } from '../../activities/events';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { eventually, startStack, type TestStack } from '../support/stack';
import { RECEIVER_ALLOW, startDnsServer, startReceiver, type DnsServer, type Receiver } from '../support/webhooks';

/**
 * Deliveries on the suite's dev server with a real worker: the test ping, signatures
 * checked by the independent standardwebhooks package, manual retry, the history kept,
 * and the destination re-checked (and re-resolved) before every attempt.
 */
let stack: TestStack;
let ws: Workspace;
let receiver: Receiver;
let dns: DnsServer;
let auth: { Authorization: string };
let emitEvent: (input: EmitEventInput) => Promise<unknown>;

beforeAll(async () => {
  dns = await startDnsServer();
  receiver = await startReceiver();
  stack = await startStack({ env: { BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW, BERTH_DNS_SERVERS: dns.address } });
  await stack.startWorker();
  emitEvent = createActivities(stack.activityDeps).emitEvent;
});
afterAll(async () => {
  if (process.env.DEBUG_LOGS) console.log(stack.logLines.filter((l) => /"level":(40|50)/.test(l)).join('\n'));
  await stack?.close();
  await receiver?.close();
  await dns?.close();
});
beforeEach(async () => {
  receiver.respond = () => ({ status: 200, body: 'ok' });
  // A workspace per test: quota_alert reaches every webhook of the workspace.
  ws = await seedWorkspace(stack.ds);
  auth = { Authorization: `Bearer ${ws.ownerToken}` };
});

async function createWebhook(body: Record<string, unknown> = {}): Promise<{ uuid: string; secret: string }> {
  const res = await stack.http
    .post('/api/v1/webhooks')
    .set(auth)
    .send({ url: receiver.url, ...body })
    .expect(201);
  return { uuid: res.body.uuid, secret: res.body.secret };
}

const deliveries = async (webhook: string) =>
  (await stack.http.get(`/api/v1/webhooks/${webhook}/deliveries`).set(auth).expect(200)).body;
const ping = async (webhook: string) =>
  (await stack.http.post(`/api/v1/webhooks/${webhook}/test`).set(auth).expect(200)).body;

async function settled(webhook: string, deliveryUuid: string) {
  return eventually(
    async () => {
      const d = (await stack.http.get(`/api/v1/webhooks/${webhook}/deliveries/${deliveryUuid}`).set(auth).expect(200))
        .body;
      return d.status !== 'pending' ? d : undefined;
    },
    { what: 'delivery settled' },
  );
}

async function emitQuota(): Promise<string> {
  const eventId = randomUUID();
  await emitEvent({ eventId, workspaceUuid: ws.uuid, type: 'quota_alert', appUuid: null, data: { used: 0.9 } });
  return eventId;
}

describe('test ping and signatures', () => {
  it('WH-21 WH-17 WH-08 WH-09 WH-29 EVT-01 the ping is sent now, signed (verified by standardwebhooks), with empty data', async () => {
    const { uuid, secret } = await createWebhook();
    const delivery = await ping(uuid);
    expect(delivery).toMatchObject({
      event_type: 'ping',
      status: 'delivered',
      response_code: 200,
      attempts: 1,
      message: 'ok',
    });
    const [hit] = receiver.hitsFor(delivery.event_id);
    expect(hit).toBeDefined();
    expect(hit!.headers['webhook-id']).toBe(delivery.event_id);
    expect(hit!.headers['webhook-timestamp']).toMatch(/^\d{10}$/);
    expect(hit!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(hit!.headers['content-type']).toBe('application/json');
    const verified = new StandardWebhook(secret).verify(hit!.body, hit!.headers as Record<string, string>);
    expect(verified).toEqual(delivery.payload);
    expect(delivery.payload).toEqual({ id: delivery.event_id, type: 'ping', timestamp: expect.any(String), data: {} });
    expect(hit!.body).toBe(JSON.stringify(delivery.payload));
    expect(() =>
      new StandardWebhook(secret).verify(hit!.body.replace('ping', 'pong'), hit!.headers as Record<string, string>),
    ).toThrow();
    const other = await createWebhook();
    expect(() => new StandardWebhook(other.secret).verify(hit!.body, hit!.headers as Record<string, string>)).toThrow();
  });

  it('WH-21 always answers 200: a 500 from the endpoint is a failed delivery with its response code', async () => {
    receiver.respond = () => ({ status: 500, body: 'boom' });
    const { uuid } = await createWebhook();
    const delivery = await ping(uuid);
    expect(delivery).toMatchObject({ status: 'failed', response_code: 500, message: 'boom', attempts: 1 });
    const shown = (await stack.http.get(`/api/v1/webhooks/${uuid}`).set(auth).expect(200)).body;
    expect(shown.consecutive_failures).toBe(0);
  });

  it('WH-17 the ping works on a disabled webhook', async () => {
    const { uuid } = await createWebhook({ enabled: false });
    const delivery = await ping(uuid);
    expect(delivery).toMatchObject({ status: 'delivered', response_code: 200 });
    expect(receiver.hitsFor(delivery.event_id)).toHaveLength(1);
  });

  it('WH-26 response_code is null when no response was received; the transport error is the message', async () => {
    const closed = await startReceiver();
    const url = closed.url;
    await closed.close();
    const { uuid } = await createWebhook({ url });
    const delivery = await ping(uuid);
    expect(delivery.status).toBe('failed');
    expect(delivery.response_code).toBeNull();
    expect(delivery.message).toMatch(/ECONNREFUSED/);
  });

  it('WH-25 the message is the response body truncated to 500 characters', async () => {
    const long = 'é'.repeat(300) + 'x'.repeat(700);
    receiver.respond = () => ({ status: 400, body: long });
    const { uuid } = await createWebhook();
    const delivery = await ping(uuid);
    expect(delivery.response_code).toBe(400);
    expect([...delivery.message]).toHaveLength(500);
    expect(delivery.message).toBe([...long].slice(0, 500).join(''));
  });

  it('redirects are not followed: a 3xx is a failed attempt and the Location is never visited', async () => {
    const elsewhere = await startReceiver();
    receiver.respond = () => ({ status: 307, body: 'moved', headers: { location: elsewhere.url } });
    const { uuid } = await createWebhook();
    const delivery = await ping(uuid);
    expect(delivery).toMatchObject({ status: 'failed', response_code: 307, message: 'moved' });
    expect(elsewhere.hits).toHaveLength(0);
    await elsewhere.close();
  });
});

describe('manual retry', () => {
  it('WH-23 WH-30 WH-15 WH-31 WH-27 a failed delivery is re-queued under the same event id, answers pending, then delivers', async () => {
    receiver.respond = () => ({ status: 503, body: 'down' });
    const { uuid } = await createWebhook();
    const failed = await ping(uuid);
    expect(failed.status).toBe('failed');
    receiver.respond = () => ({ status: 204 });
    const retried = await stack.http
      .post(`/api/v1/webhooks/${uuid}/deliveries/${failed.uuid}/retry`)
      .set(auth)
      .expect(200);
    expect(retried.body).toMatchObject({
      uuid: failed.uuid,
      event_id: failed.event_id,
      status: 'pending',
      created_at: failed.created_at,
    });
    const done = await settled(uuid, failed.uuid);
    expect(done).toMatchObject({
      status: 'delivered',
      response_code: 204,
      attempts: 2,
      event_id: failed.event_id,
      created_at: failed.created_at,
    });
    expect(Date.parse(done.last_attempt_at)).toBeGreaterThanOrEqual(Date.parse(failed.last_attempt_at));
    const hits = receiver.hitsFor(failed.event_id);
    expect(hits).toHaveLength(2);
    expect(hits.map((h) => h.body)).toEqual([hits[0]!.body, hits[0]!.body]);
    expect(JSON.parse(hits[1]!.body)).toEqual(done.payload);
    expect(hits[1]!.body).toBe(JSON.stringify(done.payload));
    expect((await deliveries(uuid)).filter((d: { event_id: string }) => d.event_id === failed.event_id)).toHaveLength(
      1,
    );
  });

  it('WH-30 a delivered delivery can be retried too: it is sent again under its original id', async () => {
    const { uuid } = await createWebhook();
    const eventId = await emitQuota();
    const [first] = await eventually(
      async () => {
        const list = await deliveries(uuid);
        return list.length === 1 && list[0].status === 'delivered' ? list : undefined;
      },
      { what: 'quota_alert delivered' },
    );
    await stack.http
      .post(`/api/v1/webhooks/${uuid}/deliveries/${first.uuid}/retry`)
      .set(auth)
      .expect(200)
      .expect((r) => expect(r.body.status).toBe('pending'));
    await eventually(async () => receiver.hitsFor(eventId).length === 2, { what: 'second arrival' });
    const done = await settled(uuid, first.uuid);
    expect(done).toMatchObject({ status: 'delivered', attempts: 2, event_id: eventId });
    expect(new Set(receiver.hitsFor(eventId).map((h) => h.headers['webhook-id']))).toEqual(new Set([eventId]));
  });

  it('WH-15 a retry of a delivery still waiting between attempts is not duplicated: the same run attempts now', async () => {
    const { uuid } = await createWebhook({ events: ['quota_alert'] });
    receiver.respond = () => ({ status: 500, body: 'not yet' });
    const eventId = await emitQuota();
    await eventually(async () => receiver.hitsFor(eventId).length === 1, { what: 'first attempt' });
    const handle = stack.temporal.workflow.getHandle(`webhook-delivery/${uuid}/${eventId}`);
    await eventually(async () => String(await handle.query('state')).startsWith('waiting'), {
      what: 'waiting for attempt 2',
    });
    const { runId } = await handle.describe();
    receiver.respond = () => ({ status: 200, body: 'ok' });
    const [pending] = await deliveries(uuid);
    const asked = Date.now();
    const res = await stack.http
      .post(`/api/v1/webhooks/${uuid}/deliveries/${pending.uuid}/retry`)
      .set(auth)
      .expect(200);
    expect(res.body).toMatchObject({ status: 'pending', event_id: eventId });
    const done = await settled(uuid, pending.uuid);
    expect(done).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(receiver.hitsFor(eventId)).toHaveLength(2);
    expect(receiver.hitsFor(eventId)[1]!.at - asked).toBeLessThan(20_000); // not the 30 s wait
    expect((await handle.describe()).runId).toBe(runId);
    expect(await handle.result()).toBe('delivered');
  });

  it('a delivery still retrying when its webhook is disabled stops at its next attempt, sends nothing and does not count', async () => {
    const { uuid } = await createWebhook({ events: ['quota_alert'] });
    receiver.respond = () => ({ status: 500 });
    const eventId = await emitQuota();
    const handle = stack.temporal.workflow.getHandle(`webhook-delivery/${uuid}/${eventId}`);
    await eventually(async () => String(await handle.query('state')).startsWith('waiting'), {
      what: 'waiting for attempt 2',
    });
    await stack.http.put(`/api/v1/webhooks/${uuid}`).set(auth).send({ enabled: false }).expect(200);
    await handle.signal('redeliver'); // wake it now instead of in 30 s
    expect(await handle.result()).toBe('stopped');
    const [d] = await deliveries(uuid);
    expect(d).toMatchObject({ status: 'failed', attempts: 1, response_code: 500 });
    expect(d.message).toMatch(/disabled/);
    expect(receiver.hitsFor(eventId)).toHaveLength(1);
    expect((await stack.http.get(`/api/v1/webhooks/${uuid}`).set(auth).expect(200)).body.consecutive_failures).toBe(0);
  });

  it('WH-23 a retry committed while Temporal is unreachable answers pending and is re-queued by the reconciler', async () => {
    receiver.respond = () => ({ status: 500, body: 'down' });
    const { uuid } = await createWebhook();
    const failed = await ping(uuid);
    receiver.respond = () => ({ status: 200, body: 'ok' });
    const workflows = stack.temporal.workflow;
    const signalWithStart = workflows.signalWithStart;
    workflows.signalWithStart = async () => {
      throw new Error('14 UNAVAILABLE: connection refused');
    };
    try {
      const res = await stack.http
        .post(`/api/v1/webhooks/${uuid}/deliveries/${failed.uuid}/retry`)
        .set(auth)
        .expect(200);
      expect(res.body).toMatchObject({ uuid: failed.uuid, status: 'pending', event_id: failed.event_id });
      const [op] = await stack.ds.query(`SELECT started_at, last_error FROM operations WHERE workflow_id = $1`, [
        `webhook-delivery/${uuid}/${failed.event_id}`,
      ]);
      expect(op).toEqual({ started_at: null, last_error: expect.stringMatching(/UNAVAILABLE/) });
    } finally {
      workflows.signalWithStart = signalWithStart;
    }
    const done = await settled(uuid, failed.uuid);
    expect(done).toMatchObject({ status: 'delivered', attempts: 2, event_id: failed.event_id });
    expect(receiver.hitsFor(failed.event_id)).toHaveLength(2);
  });

  it('WH-24 a retry on a disabled webhook is a 422 and changes nothing', async () => {
    const { uuid } = await createWebhook();
    const delivered = await ping(uuid);
    await stack.http.put(`/api/v1/webhooks/${uuid}`).set(auth).send({ enabled: false }).expect(200);
    const res = await stack.http
      .post(`/api/v1/webhooks/${uuid}/deliveries/${delivered.uuid}/retry`)
      .set(auth)
      .expect(422);
    expect(res.body.detail).toMatch(/disabled/);
    const shown = (await stack.http.get(`/api/v1/webhooks/${uuid}/deliveries/${delivered.uuid}`).set(auth).expect(200))
      .body;
    expect(shown.status).toBe('delivered');
    await stack.http.post(`/api/v1/webhooks/${uuid}/deliveries/${randomUUID()}/retry`).set(auth).expect(404);
  });
});

describe('delivery history', () => {
  it('WH-22 WH-16 WH-28 one entry per event, newest first, and only the last 50 events are kept', async () => {
    const { uuid } = await createWebhook({ events: ['quota_alert'] });
    const ids: string[] = [];
    for (let i = 0; i < 55; i++) ids.push(await emitQuota());
    const list = await eventually(
      async () => {
        const l = await deliveries(uuid);
        return l.length === 50 && l.every((d: { status: string }) => d.status === 'delivered') ? l : undefined;
      },
      { what: '50 delivered', timeoutMs: 60_000 },
    );
    expect(list.map((d: { event_id: string }) => d.event_id)).toEqual(ids.slice(5).reverse());
    for (const d of list) expect(['pending', 'delivered', 'failed']).toContain(d.status);
    const [{ count }] = await stack.ds.query(
      `SELECT count(*)::int AS count FROM webhook_deliveries WHERE webhook_uuid = $1`,
      [uuid],
    );
    expect(count).toBe(50);
    const page = await stack.http.get(`/api/v1/webhooks/${uuid}/deliveries?per_page=10&page=2`).set(auth).expect(200);
    expect(page.body.map((d: { event_id: string }) => d.event_id)).toEqual(ids.slice(5).reverse().slice(10, 20));
    expect(page.headers['x-total-count']).toBe('50');
  });
});

describe('the destination is checked again before every attempt', () => {
  it('WH-20 a name that resolved to the allowed address at create but now resolves private is not delivered to, and not retried', async () => {
    dns.set('rebind.berth.test', ['127.0.0.2']);
    const { uuid } = await createWebhook({ url: `http://rebind.berth.test:${receiver.port}/hook` });
    const first = await ping(uuid);
    expect(first).toMatchObject({ status: 'delivered', response_code: 200 });
    dns.set('rebind.berth.test', ['127.0.0.1']);
    const queriesBefore = dns.queries.length;
    const eventId = await emitQuota();
    const [delivery] = await eventually(
      async () => {
        const l = (await deliveries(uuid)).filter((d: { event_id: string }) => d.event_id === eventId);
        return l.length === 1 && l[0].status !== 'pending' ? l : undefined;
      },
      { what: 'refused delivery' },
    );
    expect(delivery).toMatchObject({ status: 'failed', attempts: 1, response_code: null });
    expect(delivery.message).toMatch(/rebind\.berth\.test resolves to 127\.0\.0\.1 is in loopback space/);
    expect(dns.queries.length).toBeGreaterThan(queriesBefore);
    expect(receiver.hitsFor(eventId)).toHaveLength(0);
    const handle = stack.temporal.workflow.getHandle(`webhook-delivery/${uuid}/${eventId}`);
    expect(await handle.result()).toBe('refused');
  });

  it('WH-20 WH-19 every private answer is refused at delivery, failed at once, with nothing sent', async () => {
    dns.set('moving.berth.test', ['127.0.0.2']);
    const { uuid } = await createWebhook({ url: `http://moving.berth.test:${receiver.port}/hook` });
    const privateAnswers = [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '240.0.0.1',
      '::1',
      'fc00::1',
      'fe80::1',
      '::ffff:127.0.0.2',
      '64:ff9b::a00:1',
      '2002:7f00:2::',
    ];
    for (const answer of privateAnswers) {
      dns.set('moving.berth.test', [answer]);
      const d = await ping(uuid);
      expect([answer, d.status, d.attempts, d.response_code]).toEqual([answer, 'failed', 1, null]);
      expect(d.message).toMatch(/refused/);
      expect(receiver.hitsFor(d.event_id)).toHaveLength(0);
    }
    dns.set('moving.berth.test', ['127.0.0.2']);
    expect((await ping(uuid)).status).toBe('delivered');
  });

  it('WH-19 a stored destination that the rules refuse (an older row, an internal name) is failed without a connection', async () => {
    const { uuid } = await createWebhook();
    for (const url of [
      `http://localhost:${receiver.port}/hook`,
      `http://127.0.0.1:${receiver.port}/hook`,
      `http://[::ffff:127.0.0.2]:${receiver.port}/hook`,
      'http://metadata.google.internal/',
      'http://printer.local/',
    ]) {
      await stack.ds.query(`UPDATE webhooks SET url = $2 WHERE uuid = $1`, [uuid, url]);
      const d = await ping(uuid);
      expect([url, d.status, d.response_code]).toEqual([url, 'failed', null]);
      expect(d.message).toMatch(/refused/);
    }
    expect(
      receiver.hits.filter((h) => h.headers.host?.startsWith('localhost') || h.headers.host?.startsWith('127.0.0.1')),
    ).toEqual([]);
  });
});
