import { randomUUID } from 'node:crypto';
import { createActivities } from '../../activities';
import type { EmitEventInput } from '../../activities/events';
import { APP_STATE_EVENT_STATES, EVENT_TYPES, SUBSCRIBABLE_EVENT_TYPES, eventData } from '../../domain/events';
import { createResource, seedWorkspace, type Workspace } from '../support/fixtures';
import { startObjectStore } from '../support/object-store';
import { eventually, startStack, type TestStack } from '../support/stack';
import { insertApp, RECEIVER_ALLOW, startReceiver, type Receiver } from '../support/webhooks';

/**
 * The event catalog and the one emit path: events go through emitEvent (the activity
 * every workflow's emit() calls), are persisted once and fanned out to the webhooks
 * whose scoping matches; the worker delivers them to a real receiver.
 */
let stack: TestStack;
let ws: Workspace;
let receiver: Receiver;
let store: Awaited<ReturnType<typeof startObjectStore>>;
let auth: { Authorization: string };
let emitEvent: (
  input: EmitEventInput,
) => Promise<{ id: string; type: string; timestamp: string; data: Record<string, unknown> }>;

beforeAll(async () => {
  receiver = await startReceiver();
  store = await startObjectStore();
  stack = await startStack({ env: { BERTH_WEBHOOK_ALLOW_CIDRS: RECEIVER_ALLOW }, objectStore: store });
  await stack.startWorker();
  emitEvent = createActivities(stack.activityDeps).emitEvent;
});
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
  await store?.dispose();
});
beforeEach(async () => {
  ws = await seedWorkspace(stack.ds);
  auth = { Authorization: `Bearer ${ws.ownerToken}` };
});

/** A webhook delivering to its own path on the receiver. */
async function hook(body: Record<string, unknown> = {}, workspace = ws): Promise<{ uuid: string; path: string }> {
  const path = `/hook/${randomUUID().slice(0, 8)}`;
  const res = await stack.http
    .post('/api/v1/webhooks')
    .set('Authorization', `Bearer ${workspace.ownerToken}`)
    .send({ url: `http://127.0.0.2:${receiver.port}${path}`, ...body })
    .expect(201);
  return { uuid: res.body.uuid, path };
}

async function emit(
  type: EmitEventInput['type'],
  appUuid: string | null,
  data: Record<string, unknown> = {},
  workspace = ws,
) {
  return emitEvent({ eventId: randomUUID(), workspaceUuid: workspace.uuid, type, appUuid, data });
}

/** Waits until every started delivery of the event has finished, then answers which webhooks got it. */
async function reached(eventId: string): Promise<string[]> {
  const rows = await eventually(
    async () => {
      const r: Array<{ webhook_uuid: string; status: string }> = await stack.ds.query(
        `SELECT webhook_uuid, status FROM webhook_deliveries WHERE event_id = $1`,
        [eventId],
      );
      return r.every((d) => d.status !== 'pending') ? r : undefined;
    },
    { what: 'deliveries finished' },
  );
  return rows.map((r) => r.webhook_uuid).sort();
}

const arrived = (path: string, eventId: string) =>
  receiver.hits.filter((h) => h.path === path && h.headers['webhook-id'] === eventId);

describe('scoping', () => {
  it('WH-02 a webhook without app_uuids receives the events of every app, including apps created later', async () => {
    const all = await hook();
    const later = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const event = await emit('deploy_started', later);
    expect(await reached(event.id)).toEqual([all.uuid]);
    expect(arrived(all.path, event.id)).toHaveLength(1);
  });

  it("WH-03 with app_uuids set, only those apps' events match", async () => {
    const a = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const b = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const onlyA = await hook({ app_uuids: [a] });
    const all = await hook();
    expect(await reached((await emit('deploy_started', a)).id)).toEqual([onlyA.uuid, all.uuid].sort());
    const eb = await emit('deploy_started', b);
    expect(await reached(eb.id)).toEqual([all.uuid]);
    expect(arrived(onlyA.path, eb.id)).toHaveLength(0);
  });

  it('WH-04 a preview environment is not covered by its parent in app_uuids unless include_review_apps is true', async () => {
    const parent = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const preview = await insertApp(stack.ds, ws.uuid, ws.resourceUuid, { previewParentUuid: parent });
    const parentOnly = await hook({ app_uuids: [parent] });
    const withReviews = await hook({ app_uuids: [parent], include_review_apps: true });
    const previewListed = await hook({ app_uuids: [preview] });
    const event = await emit('deploy_ended', preview, { message: null });
    expect(await reached(event.id)).toEqual([withReviews.uuid, previewListed.uuid].sort());
    expect(arrived(parentOnly.path, event.id)).toHaveLength(0);
    expect(await reached((await emit('deploy_ended', parent, { message: null })).id)).toEqual(
      [parentOnly.uuid, withReviews.uuid].sort(),
    );
  });

  it('WH-05 a workspace-wide webhook receives preview environment events already', async () => {
    const parent = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const preview = await insertApp(stack.ds, ws.uuid, ws.resourceUuid, { previewParentUuid: parent });
    const all = await hook();
    const event = await emit('app_unhealthy', preview);
    expect(await reached(event.id)).toEqual([all.uuid]);
    expect(arrived(all.path, event.id)).toHaveLength(1);
  });

  it('WH-06 quota_alert reaches every subscribed webhook regardless of app scoping, and no other workspace', async () => {
    const app = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const scoped = await hook({ app_uuids: [app] });
    const all = await hook();
    const quotaOnly = await hook({ events: ['quota_alert'] });
    const notSubscribed = await hook({ events: ['deploy_started'] });
    const other = await seedWorkspace(stack.ds);
    const elsewhere = await hook({}, other);
    const event = await emit('quota_alert', null, { used: 0.95 });
    expect(event.data).toEqual({ used: 0.95 });
    expect(await reached(event.id)).toEqual([scoped.uuid, all.uuid, quotaOnly.uuid].sort());
    expect(arrived(notSubscribed.path, event.id)).toHaveLength(0);
    expect(arrived(elsewhere.path, event.id)).toHaveLength(0);
  });

  it('WH-06 EVT-07 allocations crossing 80% and 100% of a compute resource raise quota_alert once per crossing, to every subscribed webhook', async () => {
    const [{ region_id }] = await stack.ds.query(`SELECT region_id FROM compute_resources WHERE uuid = $1`, [
      ws.resourceUuid,
    ]);
    const GIB = 2 ** 30;
    const resource = await createResource(stack.ds, ws.uuid, region_id, `quota-${randomUUID().slice(0, 6)}`, {
      cpu_size: 1,
      ram_size: 64 * GIB,
      disk_size: 10 * GIB,
    });
    const app = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const scoped = await hook({ app_uuids: [app] });
    const quotaOnly = await hook({ events: ['quota_alert'] });
    const notSubscribed = await hook({ events: ['deploy_started'] });
    type Alert = { id: string; data: Record<string, unknown> };
    const alerts = async (): Promise<Alert[]> =>
      (
        await stack.ds.query(
          `SELECT payload FROM events WHERE workspace_uuid = $1 AND type = 'quota_alert' ORDER BY created_at, uuid`,
          [ws.uuid],
        )
      ).map((r: { payload: Alert }) => r.payload);
    const bucket = async (gib: number) =>
      (
        await stack.http
          .post('/api/v1/buckets')
          .set(auth)
          .send({ label: `b${gib}`, resource_id: resource, disk_size: gib })
          .expect(201)
      ).body.uuid as string;

    await bucket(7);
    const small = await bucket(1); // 80%
    await bucket(1); // 90%: no new crossing
    const grown = await bucket(1); // 100%
    const two = await eventually(
      async () => {
        const a = await alerts();
        return a.length >= 2 ? a : undefined;
      },
      { what: 'two alerts' },
    );
    expect(two.map((e) => e.data)).toEqual([
      {
        resource_id: resource,
        resource_name: expect.any(String),
        dimension: 'disk',
        threshold_percent: 80,
        allocated: 8 * GIB,
        total: 10 * GIB,
      },
      {
        resource_id: resource,
        resource_name: expect.any(String),
        dimension: 'disk',
        threshold_percent: 100,
        allocated: 10 * GIB,
        total: 10 * GIB,
      },
    ]);
    for (const e of two) {
      expect(await reached(e.id)).toEqual([scoped.uuid, quotaOnly.uuid].sort());
      expect(arrived(scoped.path, e.id)).toHaveLength(1);
      expect(arrived(notSubscribed.path, e.id)).toHaveLength(0);
    }
    // below 100% again, then back to it: a new crossing; staying above 80% is none
    await stack.http.delete(`/api/v1/buckets/${small}`).set(auth).expect(204);
    await stack.http.put(`/api/v1/buckets/${grown}`).set(auth).send({ disk_size: 2 }).expect(200);
    const three = await eventually(
      async () => {
        const a = await alerts();
        return a.length >= 3 ? a : undefined;
      },
      { what: 'third alert' },
    );
    expect(three.slice(2).map((e) => [e.data.dimension, e.data.threshold_percent])).toEqual([['disk', 100]]);

    // an app's reservation (POST /apps) counts the same way: 0.85 of 1 cpu crosses 80%
    await stack.http
      .post('/api/v1/apps')
      .set(auth)
      .send({
        name: `q-${randomUUID().slice(0, 6)}`,
        resource_id: resource,
        quota: { cpu_size: 0.85, ram_size: GIB, disk_size: 0 },
      })
      .expect((res) => {
        if (res.status !== 201) throw new Error(JSON.stringify(res.body));
      });
    const cpu = await eventually(async () => (await alerts()).find((e) => e.data.dimension === 'cpu'), {
      what: 'cpu alert',
    });
    expect(cpu.data).toMatchObject({ resource_id: resource, threshold_percent: 80, allocated: 0.85, total: 1 });
    expect((await alerts()).filter((e) => e.data.dimension === 'disk')).toHaveLength(3);
  });

  it('WH-07 every event but quota_alert carries data.app_id and respects app scoping; emitting one without an app is refused', async () => {
    const app = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const other = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const scoped = await hook({ app_uuids: [app] });
    for (const type of SUBSCRIBABLE_EVENT_TYPES.filter((t) => t !== 'quota_alert')) {
      const data = type === 'app_state_changed' ? { state: 'started' } : {};
      const event = await emit(type, other, data);
      expect(event.data.app_id).toBe(other);
      expect(await reached(event.id)).toEqual([]);
      await expect(emit(type, null, data)).rejects.toThrow(/app_id/);
    }
    const mine = await emit('app_blocked', app);
    expect(await reached(mine.id)).toEqual([scoped.uuid]);
    expect(JSON.parse(arrived(scoped.path, mine.id)[0]!.body).data.app_id).toBe(app);
    await expect(emit('quota_alert', app)).rejects.toThrow(/workspace-level/);
  });

  it('WH-14 a disabled webhook gets no delivery; once re-enabled it receives from the next event on', async () => {
    const app = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const w = await hook({ enabled: false });
    const missed = await emit('deploy_started', app);
    expect(await reached(missed.id)).toEqual([]);
    await stack.http.put(`/api/v1/webhooks/${w.uuid}`).set(auth).send({ enabled: true }).expect(200);
    const next = await emit('deploy_started', app);
    expect(await reached(next.id)).toEqual([w.uuid]);
    const list = (await stack.http.get(`/api/v1/webhooks/${w.uuid}/deliveries`).set(auth).expect(200)).body;
    expect(list.map((d: { event_id: string }) => d.event_id)).toEqual([next.id]);
    expect(arrived(w.path, missed.id)).toHaveLength(0);
  });

  it('the events filter: an empty list is every type; a list is just those types', async () => {
    const app = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const deploys = await hook({ events: ['deploy_started', 'deploy_ended'] });
    const all = await hook({ events: [] });
    expect(await reached((await emit('app_crash_loop', app)).id)).toEqual([all.uuid]);
    expect(await reached((await emit('deploy_started', app)).id)).toEqual([deploys.uuid, all.uuid].sort());
  });
});

describe('the one emit path', () => {
  it('EVT-01 the envelope is {id, type, timestamp, data}, persisted once under its id; a retried emit delivers once', async () => {
    const app = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const w = await hook();
    const input: EmitEventInput = {
      eventId: randomUUID(),
      workspaceUuid: ws.uuid,
      type: 'deploy_started',
      appUuid: app,
      data: { deployment_id: 7 },
    };
    const first = await emitEvent(input);
    expect(Object.keys(first)).toEqual(['id', 'type', 'timestamp', 'data']);
    expect(first).toMatchObject({ id: input.eventId, type: 'deploy_started' });
    expect(new Date(first.timestamp).toISOString()).toBe(first.timestamp);
    await reached(input.eventId);
    const again = await emitEvent({ ...input, data: { deployment_id: 8 } });
    expect(again).toEqual(first);
    await reached(input.eventId);
    const hits = arrived(w.path, input.eventId);
    expect(hits).toHaveLength(1);
    expect(JSON.parse(hits[0]!.body)).toEqual(first);
    const [{ count }] = await stack.ds.query(`SELECT count(*)::int AS count FROM events WHERE uuid = $1`, [
      input.eventId,
    ]);
    expect(count).toBe(1);
  });

  it('EVT-02 deploy_started and deploy_ended mark a deployment; deploy_ended carries data.message, the failure reason or null', async () => {
    const app = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const w = await hook({ events: ['deploy_started', 'deploy_ended'] });
    const started = await emit('deploy_started', app, {
      commit_sha: 'abc123',
      commit_message: 'fix',
      commit_author: 'dev',
    });
    const ok = await emit('deploy_ended', app, { commit_sha: 'abc123', commit_message: 'fix', commit_author: 'dev' });
    const failed = await emit('deploy_ended', app, { commit_sha: 'abc124', message: 'build failed: exit code 1' });
    expect(ok.data.message).toBeNull();
    expect(failed.data.message).toBe('build failed: exit code 1');
    expect(started.data).not.toHaveProperty('message');
    for (const e of [started, ok, failed]) await reached(e.id);
    expect(JSON.parse(arrived(w.path, ok.id)[0]!.body).data).toHaveProperty('message', null);
    expect(JSON.parse(arrived(w.path, failed.id)[0]!.body).data.message).toBe('build failed: exit code 1');
    await expect(emit('deploy_ended', app, { message: 42 })).rejects.toThrow(/message/);
  });

  it('EVT-03 a zip or SFTP deploy has no commit: its commit fields are null', async () => {
    const app = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    for (const type of ['deploy_started', 'deploy_ended'] as const) {
      const e = await emit(type, app, { source: 'zip' });
      expect(e.data).toMatchObject({ commit_sha: null, commit_message: null, commit_author: null, source: 'zip' });
    }
  });

  it('EVT-04 app_state_changed carries data.state started, stopped, failed or restart_scheduled; a restart sends restart_scheduled then started', async () => {
    const app = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const w = await hook({ events: ['app_state_changed'] });
    expect([...APP_STATE_EVENT_STATES]).toEqual(['started', 'stopped', 'failed', 'restart_scheduled']);
    const restart = [
      await emit('app_state_changed', app, { state: 'restart_scheduled' }),
      await emit('app_state_changed', app, { state: 'started' }),
    ];
    for (const e of restart) await reached(e.id);
    expect(restart.flatMap((e) => arrived(w.path, e.id)).map((h) => JSON.parse(h.body).data.state)).toEqual([
      'restart_scheduled',
      'started',
    ]);
    for (const state of ['stopped', 'failed'])
      expect((await emit('app_state_changed', app, { state })).data.state).toBe(state);
    for (const state of ['sleeping', 'running', undefined])
      await expect(emit('app_state_changed', app, { state })).rejects.toThrow(/data\.state/);
  });

  it("EVT-05 app health and state events carry data.resource_name and data.labels of the app's compute resource (empty if none)", async () => {
    const labelled = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const bareResource = await createResource(stack.ds, ws.uuid, ws.regionId, `bare-${randomUUID().slice(0, 6)}`);
    await stack.ds.query(`UPDATE compute_resources SET labels = '{}' WHERE uuid = $1`, [bareResource]);
    const bare = await insertApp(stack.ds, ws.uuid, bareResource);
    const [{ name }] = await stack.ds.query(`SELECT name FROM compute_resources WHERE uuid = $1`, [ws.resourceUuid]);
    for (const type of [
      'app_state_changed',
      'app_unhealthy',
      'app_crash_loop',
      'app_stopped',
      'app_blocked',
      'scaling_limit_reached',
    ] as const) {
      const data = type === 'app_state_changed' ? { state: 'stopped' } : {};
      expect((await emit(type, labelled, data)).data).toMatchObject({
        app_id: labelled,
        resource_name: name,
        labels: ['test'],
      });
      expect((await emit(type, bare, data)).data).toMatchObject({ app_id: bare, labels: [] });
    }
    expect((await emit('deploy_started', labelled)).data).not.toHaveProperty('labels');
  });

  it('EVT-06 app_stopped (the platform gave up on a crashing app) is delivered like any app event', async () => {
    const app = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    const w = await hook({ events: ['app_stopped'] });
    const e = await emit('app_stopped', app, { reason: 'crash loop: gave up after repeated restarts' });
    expect(await reached(e.id)).toEqual([w.uuid]);
    expect(JSON.parse(arrived(w.path, e.id)[0]!.body)).toMatchObject({
      type: 'app_stopped',
      data: { app_id: app, reason: expect.stringMatching(/gave up/) },
    });
  });

  it('EVT-07 the event types are exactly the catalog; ping is for the test endpoint only', async () => {
    expect([...EVENT_TYPES]).toEqual([
      'deploy_started',
      'deploy_ended',
      'app_state_changed',
      'app_unhealthy',
      'app_crash_loop',
      'app_stopped',
      'app_blocked',
      'scaling_limit_reached',
      'quota_alert',
      'ping',
    ]);
    expect(SUBSCRIBABLE_EVENT_TYPES).not.toContain('ping');
    await expect(emit('ping', null)).rejects.toThrow(/test event/);
  });

  it('EVT-08 there is no separate build event: build_* types are refused', async () => {
    const app = await insertApp(stack.ds, ws.uuid, ws.resourceUuid);
    expect(EVENT_TYPES.filter((t) => t.startsWith('build'))).toEqual([]);
    for (const type of ['build_started', 'build_ended']) {
      await expect(emit(type as never, app)).rejects.toThrow(/unknown event type/);
      expect(() => eventData(type, app, {}, null)).toThrow(/unknown event type/);
    }
  });
});
