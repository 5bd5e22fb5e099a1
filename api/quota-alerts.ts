import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { quotaCrossings } from '../domain/quota-alerts';
import { resourceUsage } from '../entities/capacity';
import type { AnyRouteContext } from './route';

/**
 * Runs an allocation change on a compute resource (in the caller's transaction, the
 * resource row locked from here to commit) and, when it lifts cpu, ram or disk across 80%
 * or 100% of the resource's capacity, queues a `quotaAlert` operation that emits one
 * quota_alert per crossing after commit. A change that is rolled back alerts nothing.
 */
export async function withQuotaAlerts<T>(
  ctx: Pick<AnyRouteContext, 'caller' | 'deps' | 'dispatchAfter'>,
  m: Pick<EntityManager, 'query'>,
  resourceUuid: string,
  change: () => Promise<T>,
): Promise<T> {
  const before = await resourceUsage(m, resourceUuid);
  const result = await change();
  const after = await resourceUsage(m, resourceUuid);
  const crossings = quotaCrossings(before, after);
  if (crossings.length > 0) {
    const workspaceUuid = ctx.caller.workspaceUuid;
    const op = await ctx.deps.outbox.enqueue(m as EntityManager, {
      operation: 'quota-alert',
      workflow: 'quotaAlert',
      workspaceUuid,
      resourceUuid,
      subId: randomUUID(),
      args: [{ workspaceUuid, resourceUuid, resourceName: after.name, crossings }],
    });
    ctx.dispatchAfter(op);
  }
  return result;
}
