import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Search attributes on every Berth workflow, so an operator finds any operation in the
 * Temporal UI by workspace, resource uuid or operation name, e.g.
 * `BerthResource = "<uuid>"`.
 */
export const BerthWorkspace = defineSearchAttributeKey('BerthWorkspace', SearchAttributeType.KEYWORD);
export const BerthResource = defineSearchAttributeKey('BerthResource', SearchAttributeType.KEYWORD);
export const BerthOperation = defineSearchAttributeKey('BerthOperation', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [BerthWorkspace, BerthResource, BerthOperation];

/** The search attributes of one operation's workflow (outbox starts, event fan-out, retries). */
export function operationSearchAttributes(workspaceUuid: string, resourceUuid: string, operation: string) {
  return [
    { key: BerthWorkspace, value: workspaceUuid },
    { key: BerthResource, value: resourceUuid },
    { key: BerthOperation, value: operation },
  ];
}

/**
 * Who one operation is for: its name (the first part of the workflow id and the
 * `BerthOperation` attribute), the workspace and the resource uuid (the second part and
 * `BerthResource`), and an optional third part of the id.
 */
export interface OperationTarget {
  operation: string;
  workspaceUuid: string;
  resourceUuid: string;
  subId?: string;
}

/**
 * The workflow id and search attributes of one operation's workflow, built here once for
 * every start path: the outbox, direct client starts and schedules, child workflows.
 */
export function operationStart(target: OperationTarget) {
  return {
    workflowId: workflowIdOf(target.operation, target.resourceUuid, target.subId),
    typedSearchAttributes: operationSearchAttributes(target.workspaceUuid, target.resourceUuid, target.operation),
  };
}

/** Workflow ids: `<operation>/<resource uuid>[/<sub id>]`. */
export function workflowIdOf(operation: string, resourceUuid: string, subId?: string): string {
  return subId ? `${operation}/${resourceUuid}/${subId}` : `${operation}/${resourceUuid}`;
}
