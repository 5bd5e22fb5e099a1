import { setHandler } from '@temporalio/workflow';
import type { QuotaCrossing } from '../domain/quota-alerts';
import { stateQuery } from './common';
import { emit } from './events';

export interface QuotaAlertInput {
  workspaceUuid: string;
  resourceUuid: string;
  resourceName: string;
  crossings: QuotaCrossing[];
}

/**
 * `quota-alert/<compute resource>/<alert>`: an allocation lifted the resource across 80%
 * or 100% of its capacity (api/quota-alerts.ts); one workspace-level quota_alert per
 * crossing, which reaches every subscribed webhook whatever its app scoping (WH-06).
 */
export async function quotaAlert(input: QuotaAlertInput): Promise<number> {
  let sent = 0;
  setHandler(stateQuery, () => `sent ${sent} of ${input.crossings.length}`);
  for (const c of input.crossings) {
    await emit(input.workspaceUuid, 'quota_alert', null, {
      resource_id: input.resourceUuid,
      resource_name: input.resourceName,
      dimension: c.dimension,
      threshold_percent: c.threshold_percent,
      allocated: c.allocated,
      total: c.total,
    });
    sent += 1;
  }
  return sent;
}
