import { randomUUID } from 'node:crypto';
import { BerthOperation, BerthResource, BerthWorkspace } from '../../domain/search-attributes';
import { seedWorkspace } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';
import { timeSkipping, type TimeSkipping } from '../support/temporal';

let stack: TestStack;
let ts: TimeSkipping;

beforeAll(async () => {
  stack = await startStack();
  ts = await timeSkipping(stack.activityDeps);
});
afterAll(async () => {
  await ts?.close();
  await stack?.close();
});

describe('projectDelete workflow', () => {
  it('PRJ-06 releases the resource assignments, then deletes; carries search attributes and a state query', async () => {
    const ws = await seedWorkspace(stack.ds);
    const projectUuid = randomUUID();
    await stack.ds.query(`INSERT INTO projects (uuid, workspace_uuid, name, state) VALUES ($1, $2, 'p', 'deleting')`, [
      projectUuid,
      ws.uuid,
    ]);
    await stack.ds.query(`INSERT INTO project_resources (project_uuid, resource_uuid) VALUES ($1, $2)`, [
      projectUuid,
      ws.resourceUuid,
    ]);
    const op = await stack.ds.transaction((m) =>
      ts.outbox.enqueue(m, {
        operation: 'project-delete',
        workflow: 'projectDelete',
        workspaceUuid: ws.uuid,
        resourceUuid: projectUuid,
        args: [{ projectUuid }],
      }),
    );
    await ts.withWorker(async () => {
      await ts.outbox.dispatch(op);
      const handle = ts.client.workflow.getHandle(op.workflowId);
      await handle.result();
      expect(await handle.query('state')).toBe('deleted');
      const description = await handle.describe();
      expect(description.typedSearchAttributes.get(BerthWorkspace)).toBe(ws.uuid);
      expect(description.typedSearchAttributes.get(BerthResource)).toBe(projectUuid);
      expect(description.typedSearchAttributes.get(BerthOperation)).toBe('project-delete');
    });
    expect(await stack.ds.query(`SELECT 1 FROM projects WHERE uuid = $1`, [projectUuid])).toHaveLength(0);
    expect(await stack.ds.query(`SELECT 1 FROM project_resources WHERE project_uuid = $1`, [projectUuid])).toHaveLength(
      0,
    );
  });

  it('is idempotent: a project no longer deleting is left alone', async () => {
    const ws = await seedWorkspace(stack.ds);
    const projectUuid = randomUUID();
    await stack.ds.query(`INSERT INTO projects (uuid, workspace_uuid, name) VALUES ($1, $2, 'kept')`, [
      projectUuid,
      ws.uuid,
    ]);
    await ts.withWorker(() =>
      ts.client.workflow.execute('projectDelete', {
        taskQueue: ts.taskQueue,
        workflowId: `project-delete/${projectUuid}`,
        args: [{ projectUuid }],
      }),
    );
    expect(await stack.ds.query(`SELECT 1 FROM projects WHERE uuid = $1`, [projectUuid])).toHaveLength(1);
  });
});
