import { PostgresQueryRunner } from 'typeorm/driver/postgres/PostgresQueryRunner';
import { randomUUID } from 'node:crypto';
import { WorkflowIdConflictPolicy, WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import pino from 'pino';
import { BerthOperation, BerthResource, BerthWorkspace } from '../../domain/search-attributes';
import { Outbox } from '../../platform/outbox';
import { freshDatabase, type TestDatabase } from '../support/db';

let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase();
});
afterAll(async () => {
  await db?.drop();
});

/** A client that records the starts it is asked for (and fails them while `failing`). */
function recordingClient() {
  // What the outbox hands the client: the workflow's name as the SDK takes it.
  type Started = Parameters<Client['workflow']['start']>[0];
  const calls: { kind: 'start' | 'signalWithStart'; workflowType: Started; options: Record<string, unknown> }[] = [];
  const state = { failing: false };
  const record =
    (kind: 'start' | 'signalWithStart') => async (workflowType: Started, options: Record<string, unknown>) => {
      if (state.failing) throw new Error('14 UNAVAILABLE: connection refused');
      calls.push({ kind, workflowType, options });
    };
  const client = {
    workflow: { start: record('start'), signalWithStart: record('signalWithStart') },
  } as unknown as Client;
  return { client, calls, state };
}

function outboxWith(client: Client) {
  return new Outbox(db.ds, client, { taskQueue: 'outbox-test', logger: pino({ level: 'silent' }) });
}

async function row(uuid: string) {
  const [found] = await db.ds.query(`SELECT * FROM operations WHERE uuid = $1`, [uuid]);
  return found;
}

describe('outbox', () => {
  it('enqueues a typed start and dispatches it from the row it wrote, with the id and search attributes of the operation', async () => {
    const { client, calls } = recordingClient();
    const outbox = outboxWith(client);
    const workspaceUuid = randomUUID();
    const appUuid = randomUUID();
    const deploymentUuid = randomUUID();
    const op = await db.ds.transaction((m) =>
      outbox.enqueue(m, {
        operation: 'app-deploy',
        workflow: 'appDeploy',
        workspaceUuid,
        resourceUuid: appUuid,
        subId: deploymentUuid,
        args: [{ deploymentUuid }],
      }),
    );
    expect(op.workflowId).toBe(`app-deploy/${appUuid}/${deploymentUuid}`);
    expect(await row(op.uuid)).toMatchObject({
      workflow_id: op.workflowId,
      workflow_type: 'appDeploy',
      args: [{ deploymentUuid }],
      started_at: null,
    });

    // Every statement, raw or built, goes through the query runner.
    const query = jest.spyOn(PostgresQueryRunner.prototype, 'query');
    try {
      await outbox.dispatch(op);
      expect(query.mock.calls.map(([sql]) => String(sql).trim().split(/\s+/)[0])).toEqual(['UPDATE']);
    } finally {
      query.mockRestore();
    }
    expect(calls).toEqual([
      {
        kind: 'start',
        workflowType: 'appDeploy',
        options: {
          workflowId: op.workflowId,
          taskQueue: 'outbox-test',
          args: [{ deploymentUuid }],
          typedSearchAttributes: [
            { key: BerthWorkspace, value: workspaceUuid },
            { key: BerthResource, value: appUuid },
            { key: BerthOperation, value: 'app-deploy' },
          ],
          workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
        },
      },
    ]);
    expect((await row(op.uuid)).started_at).not.toBeNull();

    await outbox.dispatch(op);
    expect(calls).toHaveLength(1);
  });

  it('sends an operation with a signal as a signal-with-start', async () => {
    const { client, calls } = recordingClient();
    const outbox = outboxWith(client);
    const webhookUuid = randomUUID();
    const op = await db.ds.transaction((m) =>
      outbox.enqueue(m, {
        operation: 'webhook-delivery',
        workflow: 'webhookDelivery',
        workspaceUuid: randomUUID(),
        resourceUuid: webhookUuid,
        subId: 'evt-1',
        args: [{ webhookUuid, eventId: 'evt-1' }],
        signal: { name: 'redeliver' },
      }),
    );
    await outbox.dispatch(op);
    expect(calls).toMatchObject([
      {
        kind: 'signalWithStart',
        workflowType: 'webhookDelivery',
        options: {
          workflowId: `webhook-delivery/${webhookUuid}/evt-1`,
          signal: 'redeliver',
          signalArgs: [],
          workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
        },
      },
    ]);
  });

  it('leaves a failed or never dispatched start to the reconciler, which starts it from the table', async () => {
    const { client, calls, state } = recordingClient();
    const outbox = outboxWith(client);
    const enqueue = (projectUuid: string) =>
      db.ds.transaction((m) =>
        outbox.enqueue(m, {
          operation: 'project-delete',
          workflow: 'projectDelete',
          workspaceUuid: randomUUID(),
          resourceUuid: projectUuid,
          args: [{ projectUuid }],
        }),
      );
    const failed = await enqueue(randomUUID());
    state.failing = true;
    await outbox.dispatch(failed);
    state.failing = false;
    expect(await row(failed.uuid)).toMatchObject({
      started_at: null,
      start_attempts: 1,
      last_error: expect.stringMatching(/UNAVAILABLE/),
    });
    const crashed = await enqueue(randomUUID()); // the process died after the commit: never dispatched

    expect(await outbox.reconcile(0)).toBe(2);
    expect(calls.map((c) => c.options.workflowId).sort()).toEqual([failed.workflowId, crashed.workflowId].sort());
    expect(calls.every((c) => c.kind === 'start' && c.workflowType === 'projectDelete')).toBe(true);
    expect((await row(failed.uuid)).started_at).not.toBeNull();
    expect((await row(crashed.uuid)).started_at).not.toBeNull();
  });
});
