import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stateQuery } from './common';
import { quickDb } from './activity-options';

const { releaseProjectAssignments, deleteProject } = proxyActivities<Activities>(quickDb);

export interface ProjectDeleteInput {
  projectUuid: string;
}

/** Where projectDelete is, as its `state` query answers. */
export type ProjectDeleteState = 'releasing' | 'deleting' | 'deleted';

/** Deletes a project: releases its compute resource assignments, then removes it. */
export async function projectDelete(input: ProjectDeleteInput): Promise<void> {
  let state: ProjectDeleteState = 'releasing';
  setHandler(stateQuery, () => state);
  await releaseProjectAssignments(input.projectUuid);
  state = 'deleting';
  await deleteProject(input.projectUuid);
  state = 'deleted';
}
