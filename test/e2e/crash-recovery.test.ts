import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { seedWorkspace } from '../support/fixtures';
import { eventually, startStack, type TestStack } from '../support/stack';
import { crashableApi, type CrashableApi } from './support/crashable-api';

/**
 * A crash between the commit of an entity and the start of its workflow must not strand
 * it. The API runs in its own process against a Temporal address that accepts connections
 * and never answers, so the request commits and then hangs in the workflow start; the test
 * kills the process there (SIGKILL), then a worker's reconciler must start the workflow.
 */
let stack: TestStack;
let api: CrashableApi;

beforeAll(async () => {
  stack = await startStack();
  api = await crashableApi(stack);
});
afterAll(async () => {
  await api?.close();
  await stack?.close();
});

describe('crash between commit and workflow start', () => {
  it('the reconciler starts the workflow of an entity whose request was killed after commit', async () => {
    const ws = await seedWorkspace(stack.ds);
    const project = (
      await stack.http
        .post('/api/v1/projects')
        .set('Authorization', `Bearer ${ws.ownerToken}`)
        .send({ name: `crash-${randomBytes(3).toString('hex')}` })
    ).body;
    const port = await api.start();
    const pending = request(`http://127.0.0.1:${port}`)
      .delete(`/api/v1/projects/${project.uuid}`)
      .set('Authorization', `Bearer ${ws.ownerToken}`)
      .then(
        () => 'answered',
        () => 'killed',
      );

    // The transaction commits (project deleting, outbox row written), then the start hangs.
    const op = await eventually(
      async () =>
        (
          await stack.ds.query(
            `SELECT o.uuid, o.started_at, p.state FROM operations o JOIN projects p ON p.uuid = o.resource_uuid WHERE o.resource_uuid = $1`,
            [project.uuid],
          )
        )[0],
      { what: 'committed outbox row' },
    );
    expect(op.state).toBe('deleting');
    expect(op.started_at).toBeNull();
    await api.kill();
    expect(await pending).toBe('killed');

    // Nothing started the workflow: it does not exist on the server.
    await expect(stack.temporal.workflow.getHandle(`project-delete/${project.uuid}`).describe()).rejects.toThrow(
      /not found/i,
    );

    // A worker's reconciler recovers it.
    await stack.startWorker();
    await eventually(
      async () => (await stack.ds.query(`SELECT 1 FROM projects WHERE uuid = $1`, [project.uuid])).length === 0,
      { what: 'project deleted by the recovered workflow', timeoutMs: 30_000 },
    );
    const [row] = await stack.ds.query(`SELECT started_at, start_attempts FROM operations WHERE uuid = $1`, [op.uuid]);
    expect(row.started_at).not.toBeNull();
    const handle = stack.temporal.workflow.getHandle(`project-delete/${project.uuid}`);
    await handle.result();
    expect((await handle.describe()).status.name).toBe('COMPLETED');
  });
});
