import { MockActivityEnvironment } from '@temporalio/testing';
import { attemptScopedUuid } from '../../activities/attempt-id';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const execution = { workflowId: 'preview/p/pr-1', runId: 'run-1' };
const inActivity = (info: { attempt?: number; activityId?: string; runId?: string }, perActivity?: boolean) =>
  new MockActivityEnvironment({
    attempt: info.attempt ?? 1,
    activityId: info.activityId ?? '7',
    workflowExecution: { ...execution, runId: info.runId ?? execution.runId },
  }).run(async () => attemptScopedUuid('preview-deploy', { perActivity }));

describe('attempt-scoped ids', () => {
  it('every retry of one activity execution gets the same uuid; another activity or run another', async () => {
    const first = await inActivity({ attempt: 1 });
    expect(first).toMatch(UUID);
    expect(await inActivity({ attempt: 3 })).toBe(first);
    expect(await inActivity({ activityId: '8' })).not.toBe(first);
    expect(await inActivity({ runId: 'run-2' })).not.toBe(first);
  });

  it('perActivity false: one uuid for the whole workflow run; outside an activity a fresh one each time', async () => {
    expect(await inActivity({ activityId: '1' }, false)).toBe(await inActivity({ activityId: '2' }, false));
    const a = attemptScopedUuid('x');
    expect(a).not.toBe(attemptScopedUuid('x'));
    expect(a).toMatch(/^[0-9a-f-]{36}$/);
  });
});
