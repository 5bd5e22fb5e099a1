import { PREVIEW_WAKE_SIGNAL } from '../domain/previews';
import { workflowIdOf } from '../domain/search-attributes';
import type { ApiDeps } from './context';

/** Shared by the preview routes and the code-host endpoint. */

export const PREVIEW_OPERATION = 'preview';

export function previewWorkflowId(parentAppUuid: string, key: string): string {
  return workflowIdOf(PREVIEW_OPERATION, parentAppUuid, key);
}

/**
 * Tells an environment's workflow to re-read its row after a committed change. Best
 * effort: a lost signal is caught up by the workflow's periodic re-read.
 */
export async function wakePreview(deps: ApiDeps, parentAppUuid: string, key: string): Promise<void> {
  try {
    await deps.temporal.workflow.getHandle(previewWorkflowId(parentAppUuid, key)).signal(PREVIEW_WAKE_SIGNAL);
  } catch (err) {
    deps.logger.warn(
      { err, parentAppUuid, key },
      'could not wake the preview environment workflow; its periodic re-read will pick the change up',
    );
  }
}

/** The compute resource and project previews of a parent run on (config, else the parent's). */
export function effectiveTarget(
  parent: { resource_uuid: string; project_uuid: string | null },
  config: { resource_uuid: string | null; project_uuid: string | null },
) {
  return {
    resourceUuid: config.resource_uuid ?? parent.resource_uuid,
    projectUuid: config.project_uuid ?? parent.project_uuid,
  };
}
