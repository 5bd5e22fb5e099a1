import {
  InternalConnectionLikeSymbol,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
  type Client,
} from '@temporalio/client';
import type { OperationTarget } from '../domain/search-attributes';
import { typedStart } from './workflow-starts';
import {
  WEBHOOK_DELIVERY_OPERATION,
  WEBHOOK_DELIVERY_WORKFLOW,
  WEBHOOK_REDELIVER_SIGNAL,
  type WebhookDeliveryArgs,
} from '../domain/webhooks';
import type { OperationRequest } from './outbox';

/** The delivery of one webhook and event: `webhook-delivery/<webhook uuid>/<event id>`. */
function target(workspaceUuid: string, args: WebhookDeliveryArgs): OperationTarget {
  return { operation: WEBHOOK_DELIVERY_OPERATION, workspaceUuid, resourceUuid: args.webhookUuid, subId: args.eventId };
}

/**
 * Whether the client shares a worker's NativeConnection, so the server can hand the new
 * workflow's first task straight back in the start's answer (eager start) instead of
 * through a poll; the SDK refuses the request on any other connection.
 */
function sharesWorkerConnection(client: Client): boolean {
  const connection = client.connection as { [InternalConnectionLikeSymbol]?: { supportsEagerStart?: boolean } };
  return connection[InternalConnectionLikeSymbol]?.supportsEagerStart === true;
}

/**
 * Starts the delivery workflow of one webhook and event (event fan-out, test pings). A
 * run already going is used as is and a finished one is not started again, so a retried
 * fan-out delivers once; manual retries go through `redeliveryOperation`.
 */
export async function startWebhookDelivery(
  client: Client,
  taskQueue: string,
  workspaceUuid: string,
  args: WebhookDeliveryArgs,
): Promise<void> {
  try {
    const delivery = typedStart(WEBHOOK_DELIVERY_WORKFLOW, [args], target(workspaceUuid, args));
    await client.workflow.start(delivery.workflowType, {
      ...delivery.options,
      taskQueue,
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      requestEagerStart: sharesWorkerConnection(client),
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return;
    throw err;
  }
}

/**
 * A manual retry, as an outbox operation (enqueued in the retry's transaction, so a crash
 * after the commit cannot lose it): signal-with-start under the same workflow id. A
 * running delivery gets the `redeliver` signal (it attempts now, or starts another cycle
 * if it had finished its last one), so it is never duplicated; a finished one is started
 * again as a new run.
 */
export function redeliveryOperation(
  workspaceUuid: string,
  args: WebhookDeliveryArgs,
): OperationRequest<typeof WEBHOOK_DELIVERY_WORKFLOW> {
  return {
    ...target(workspaceUuid, args),
    workflow: WEBHOOK_DELIVERY_WORKFLOW,
    args: [args],
    signal: { name: WEBHOOK_REDELIVER_SIGNAL },
  };
}
