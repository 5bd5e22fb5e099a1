import { createHash, randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';

/**
 * A uuid fixed for the activity execution that asks (every retry of it gets the same one),
 * so a retried activity finds what its earlier attempt wrote instead of writing it twice.
 * Name-based, in the layout of a version 5 UUID; a fresh one outside an activity.
 * `perActivity: false` makes it the same for every activity of the workflow run.
 */
export function attemptScopedUuid(label: string, options: { perActivity?: boolean } = {}): string {
  let key: string | undefined;
  try {
    const info = Context.current().info;
    const execution = info.workflowExecution;
    if (execution)
      key = `${label}:${execution.workflowId}:${execution.runId}${options.perActivity === false ? '' : `:${info.activityId}`}`;
  } catch {
    key = undefined;
  }
  if (!key) return randomUUID();
  const h = createHash('sha1').update(key).digest('hex');
  const variant = (8 | (parseInt(h[16]!, 16) & 3)).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
