import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import supertest from 'supertest';
import { createActivities } from '../../activities';
import { createApp as createKoaApp } from '../../api/app';
import { DEV_SERVER_DYNAMIC_CONFIG, startTemporalDevServer } from '../../bin/temporal-server';
import type { AppState } from '../../domain/apps';
import { Outbox } from '../../platform/outbox';
import { liveStatusSignal } from '../../workflows/app-steps';
import { auth } from './apps';
import { testEnv } from './env';
import type { Workspace } from './fixtures';
import { eventually, type TestStack } from './stack';

/**
 * A Temporal dev server of its own that suggests continue-as-new after a few history events,
 * so the app workflow continues as new at the end of every iteration of its loop. The API of
 * `stack` starts its workflows there; `withWorker` runs the suite's bundle with the real
 * activities on it, and `duringLastStep` sends something while an iteration's last step
 * (its live-status move, after the signal queues were drained) runs.
 */
export async function eagerContinueAsNew(stack: TestStack, suggestAfterEvents = 10) {
  const server = await startTemporalDevServer({
    executable: { type: 'existing-path', path: testEnv('cli') },
    dynamicConfig: { ...DEV_SERVER_DYNAMIC_CONFIG, 'limit.historyCount.suggestContinueAsNew': suggestAfterEvents },
  });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  const native = await NativeConnection.connect({ address: server.address });
  const taskQueue = `can-${randomBytes(6).toString('hex')}`;
  const outbox = new Outbox(stack.ds, client, { taskQueue, logger: stack.logger });
  const api = supertest(createKoaApp({ ...stack.apiDeps, outbox, temporal: client }).callback());
  const activities = createActivities({ ...stack.activityDeps, temporal: client });
  /** Set while a test waits in duringLastStep: the next live-status move stops until it is released. */
  let gate: { entered(): void; released: Promise<void> } | null = null;
  async function moveApp(appUuid: string, from: readonly AppState[], to: AppState) {
    // the live-status move is the one from running, failed or problem (never from started)
    if (gate && from.includes('problem') && !from.includes('started')) {
      const { entered, released } = gate;
      gate = null;
      entered();
      await released;
    }
    return activities.moveApp(appUuid, from, to);
  }
  const handle = (appUuid: string, runId?: string) => client.workflow.getHandle(`app/${appUuid}`, runId);
  return {
    client,
    api,
    handle,
    withWorker<T>(fn: () => Promise<T>): Promise<T> {
      return Worker.create({
        connection: native,
        taskQueue,
        workflowBundle: { codePath: testEnv('workflowBundle') },
        activities: { ...activities, moveApp },
      }).then((worker) => worker.runUntil(fn()));
    },
    /** Creates an app through the API and waits until its workflow supervises it running; answers its first run. */
    async runningApp(ws: Workspace, name: string): Promise<{ uuid: string; firstRun: string }> {
      const res = await api.post('/api/v1/apps').set(auth(ws.ownerToken)).send({ name, resource_id: ws.resourceUuid });
      if (res.status !== 201) throw new Error(`POST /apps answered ${res.status}: ${res.text}`);
      const uuid = res.body.uuid as string;
      await eventually(
        async () =>
          (await handle(uuid)
            .query<string>('state')
            .catch(() => '')) === 'supervising:running',
        {
          what: `${name} supervising running`,
          timeoutMs: 30_000,
        },
      );
      return { uuid, firstRun: (await handle(uuid).describe()).runId };
    },
    /** PATCH /apps/{uuid}/state, and waits until appSendCommand has delivered the command to the app's workflow. */
    async changeState(ws: Workspace, appUuid: string, action: string): Promise<void> {
      await api.patch(`/api/v1/apps/${appUuid}/state`).set(auth(ws.ownerToken)).send({ action }).expect(202);
      const [op] = await stack.ds.query(
        `SELECT workflow_id FROM operations WHERE workflow_type = 'appSendCommand' AND resource_uuid = $1 ORDER BY created_at DESC LIMIT 1`,
        [appUuid],
      );
      await client.workflow.getHandle(op.workflow_id).result();
    },
    /** Runs `send` while the app workflow's live-status move (the last step of its iteration) is held. */
    async duringLastStep(appUuid: string, send: () => Promise<void>): Promise<void> {
      let release!: () => void;
      const entered = new Promise<void>((resolve) => {
        gate = { entered: resolve, released: new Promise<void>((r) => (release = r)) };
      });
      await handle(appUuid).signal(liveStatusSignal, { status: 'running' });
      await entered;
      try {
        await send();
      } finally {
        release();
      }
    },
    /** Waits until the run ended by continuing as new. */
    continuedAsNew(appUuid: string, runId: string): Promise<true> {
      return eventually(
        async () => (await handle(appUuid, runId).describe()).status.name === 'CONTINUED_AS_NEW' || undefined,
        { what: `run ${runId} of app ${appUuid} to continue as new` },
      );
    },
    async close() {
      await native.close();
      await connection.close();
      await server.stop();
    },
  };
}
