import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stateQuery } from './common';

const { releaseProjectAssignments, deleteProject } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export interface ProjectDeleteInput {
  projectUuid: string;
}

/** Deletes a project: releases its compute resource assignments, then removes it. */
export async function projectDelete(input: ProjectDeleteInput): Promise<void> {
  let state = 'releasing';
  setHandler(stateQuery, () => state);
  await releaseProjectAssignments(input.projectUuid);
  state = 'deleting';
  await deleteProject(input.projectUuid);
  state = 'deleted';
}
