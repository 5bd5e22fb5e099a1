import type { temporal } from '@temporalio/proto';
import request from 'supertest';
import { createApp } from '../../api/app';
import { BerthOperation, BerthResource } from '../../domain/search-attributes';
import { insertApp } from '../support/app-rows';
import { deliver, pullRequestPayload, pushPayload, sha } from '../support/code-host';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';
import { timeSkipping, type TimeSkipping } from '../support/temporal';

let stack: TestStack;
let ts: TimeSkipping;
let ws: Workspace;
/** The API with its outbox and client on the time-skipping server. */
let http: ReturnType<typeof request>;

beforeAll(async () => {
  stack = await startStack();
  ts = await timeSkipping(stack.activityDeps);
  ws = await seedWorkspace(stack.ds);
  http = request(createApp({ ...stack.apiDeps, outbox: ts.outbox, temporal: ts.client }).callback());
});
afterAll(async () => {
  await ts?.close();
  await stack?.close();
});

const HOUR = 3600;

function seconds(d: { seconds?: unknown; nanos?: unknown } | null | undefined): number {
  return Number(d?.seconds ?? 0) + Number(d?.nanos ?? 0) / 1e9;
}

function timers(history: temporal.api.history.v1.IHistory): number[] {
  return (history.events ?? [])
    .filter((e) => e.timerStartedEventAttributes)
    .map((e) => seconds(e.timerStartedEventAttributes!.startToFireTimeout));
}

function eventTime(e: temporal.api.history.v1.IHistoryEvent): number {
  return seconds(e.eventTime as never) * 1000;
}

describe('previewEnvironment workflow', () => {
  it('PRV-08 a branch environment is destroyed when expires_at is reached (a timer in the workflow)', async () => {
    const app = await insertApp(stack.ds, ws);
    const config = await http
      .put(`/api/v1/apps/${app.uuid}/preview_environments/config`)
      .set({ Authorization: `Bearer ${ws.ownerToken}` })
      .send({ enabled: true, triggers: { pull_requests: false, branch_patterns: ['staging'] }, lifetime_hours: 48 });
    expect(config.status).toBe(200);
    const secret: string = config.body.webhook_secret;
    const commit = sha();
    const created = await deliver({ ...stack, http }, app.uuid, secret, 'push', pushPayload('staging', commit));
    expect(created.body.result).toBe('created');
    const [row] = await stack.ds.query(
      `SELECT app_uuid, expires_at, created_at FROM preview_environments WHERE id = $1`,
      [created.body.preview_environment_id],
    );
    expect(new Date(row.expires_at).getTime() - new Date(row.created_at).getTime()).toBeGreaterThanOrEqual(
      48 * HOUR * 1000 - 1000,
    );

    await ts.withWorker(async () => {
      const handle = ts.client.workflow.getHandle(`preview/${app.uuid}/branch-staging`);
      expect(await handle.result()).toBe('gone');
      const description = await handle.describe();
      expect(description.typedSearchAttributes.get(BerthResource)).toBe(app.uuid);
      expect(description.typedSearchAttributes.get(BerthOperation)).toBe('preview');
      const history = await handle.fetchHistory();
      const waits = timers(history);
      // Re-reads at least hourly until expiry: about 48 hours of timers, none longer than an hour.
      expect(Math.max(...waits)).toBeLessThanOrEqual(HOUR);
      const total = waits.reduce((a, b) => a + b, 0);
      expect(total).toBeGreaterThan(47.9 * HOUR);
      expect(total).toBeLessThanOrEqual(48 * HOUR);
      const events = history.events ?? [];
      const destroyScheduled = events.find(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'destroyPreviewApp',
      )!;
      const expireScheduled = events.find(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'expirePreview',
      )!;
      expect(expireScheduled).toBeDefined();
      expect(eventTime(destroyScheduled) - eventTime(events[0]!)).toBeGreaterThanOrEqual(47.9 * HOUR * 1000);
    });
    expect(
      await stack.ds.query(`SELECT 1 FROM preview_environments WHERE id = $1`, [created.body.preview_environment_id]),
    ).toHaveLength(0);
    expect(await stack.ds.query(`SELECT 1 FROM apps WHERE uuid = $1`, [row.app_uuid])).toHaveLength(0);
    const deploys = await stack.ds.query(`SELECT type FROM events WHERE app_uuid = $1 ORDER BY created_at`, [
      row.app_uuid,
    ]);
    expect(deploys.map((e: { type: string }) => e.type)).toEqual(['deploy_started', 'deploy_ended']);
  });

  it('PRV-08 a new commit pushes expires_at out by the lifetime', async () => {
    const app = await insertApp(stack.ds, ws);
    const config = await http
      .put(`/api/v1/apps/${app.uuid}/preview_environments/config`)
      .set({ Authorization: `Bearer ${ws.ownerToken}` })
      .send({ enabled: true, triggers: { branch_patterns: ['qa'] }, lifetime_hours: 2 });
    const secret: string = config.body.webhook_secret;
    const created = await deliver({ ...stack, http }, app.uuid, secret, 'push', pushPayload('qa', sha()));
    const id = created.body.preview_environment_id;
    await stack.ds.query(`UPDATE preview_environments SET expires_at = now() + interval '1 minute' WHERE id = $1`, [
      id,
    ]);
    const before = (await stack.ds.query(`SELECT expires_at FROM preview_environments WHERE id = $1`, [id]))[0]
      .expires_at;
    const updated = await deliver({ ...stack, http }, app.uuid, secret, 'push', pushPayload('qa', sha()));
    expect(updated.body).toEqual({ result: 'updated', preview_environment_id: id });
    const after = (await stack.ds.query(`SELECT expires_at FROM preview_environments WHERE id = $1`, [id]))[0]
      .expires_at;
    expect(new Date(after).getTime() - new Date(before).getTime()).toBeGreaterThan(HOUR * 1000);
    await ts.withWorker(async () => {
      const handle = ts.client.workflow.getHandle(`preview/${app.uuid}/branch-qa`);
      expect(await handle.result()).toBe('gone');
    });
  });

  it('re-reads its environment at least hourly, so a change whose wake signal was lost is still deployed', async () => {
    const app = await insertApp(stack.ds, ws);
    const config = await http
      .put(`/api/v1/apps/${app.uuid}/preview_environments/config`)
      .set({ Authorization: `Bearer ${ws.ownerToken}` })
      .send({ enabled: true });
    const secret: string = config.body.webhook_secret;
    const created = await deliver(
      { ...stack, http },
      app.uuid,
      secret,
      'pull_request',
      pullRequestPayload({ action: 'opened', number: 1, headSha: sha() }),
    );
    const id: number = created.body.preview_environment_id;
    const status = async () =>
      (await stack.ds.query(`SELECT status, commit_sha FROM preview_environments WHERE id = $1`, [id]))[0];
    await ts.withWorker(async () => {
      const handle = ts.client.workflow.getHandle(`preview/${app.uuid}/pr-1`);
      // Deployed, and waiting (its state query answers the status it waits in).
      while ((await status()).status !== 'active' || (await handle.query('state')) !== 'active')
        await new Promise((r) => setTimeout(r, 50));
      // What the code-host endpoint writes for a new commit, without its signal.
      const next = sha();
      await stack.ds.query(
        `UPDATE preview_environments SET head_sha = $2, generation = generation + 1, status = 'updating' WHERE id = $1`,
        [id, next],
      );
      await new Promise((r) => setTimeout(r, 300));
      expect((await status()).status).toBe('updating');
      await ts.env.sleep(61 * 60 * 1000);
      for (let i = 0; i < 100 && (await status()).status !== 'active'; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await status()).toEqual({ status: 'active', commit_sha: next });
      await handle.terminate('test done');
    });
  });
});
