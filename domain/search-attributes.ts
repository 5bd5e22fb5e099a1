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

/** Workflow ids: `<operation>/<resource uuid>[/<sub id>]`. */
export function workflowIdOf(operation: string, resourceUuid: string, subId?: string): string {
  return subId ? `${operation}/${resourceUuid}/${subId}` : `${operation}/${resourceUuid}`;
}
