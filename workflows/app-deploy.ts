import {
  condition,
  defineSignal,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  setHandler,
} from '@temporalio/workflow';
import { appWorkflowId, type AppState } from '../domain/apps';
import { stateQuery } from './common';
import { acts, awaitLive, POLL_INTERVAL, refreshSignal } from './app-steps';
import { emit } from './events';
import { failureMessage } from './failures';

export interface AppDeployInput {
  deploymentUuid: string;
  /**
   * Set when a preview environment's workflow runs the deployment of its app (a child of
   * it): that workflow emits the deploy events with the preview's fields (docs/decisions.md
   * "Deploy events"), so this one emits none.
   */
  previewEnvironmentId?: number;
}

/** Sent by POST .../deployments/{uuid}/cancel (the database's `cancelling` is the durable record). */
export const cancelDeploymentSignal = defineSignal('cancelDeployment');

/** Where appDeploy is, as its `state` query answers (it ends on the outcome). */
export type AppDeployState =
  'beginning' | 'resolving' | 'building' | 'rolling-out' | 'finishing' | 'completed' | 'failed' | 'cancelled';

/**
 * One deployment (`app-deploy/<app>/<deployment>`): pending -> running -> completed |
 * failed, or cancelling -> cancelled. The app reads `deploying` meanwhile and returns to
 * its live status (or, when nothing new was rolled out, its state before). Build and
 * rollout are one lifecycle: deploy_started, then deploy_ended with data.message the
 * failure reason (null on success); commit fields are null for non-git methods. A release
 * that does not take over (the driver's `rolloutFailure`, e.g. it exited at boot) fails
 * the deployment with the driver's reason while the app keeps the status of the release
 * that still serves.
 */
export async function appDeploy(input: AppDeployInput): Promise<string> {
  const id = input.deploymentUuid;
  let state: AppDeployState = 'beginning';
  let cancel = false;
  setHandler(stateQuery, () => state);
  setHandler(cancelDeploymentSignal, () => {
    cancel = true;
  });

  const quiet = input.previewEnvironmentId !== undefined;
  const emitDeployEvent: typeof emit = (...args) => (quiet ? Promise.resolve('') : emit(...args));
  const start = await acts.beginDeployment(id);
  if (!start) {
    // Cancelled before it began: no events, nothing to undo.
    await acts.finishDeployment(id, 'cancelled', null);
    state = 'cancelled';
    return state;
  }
  const { appUuid, workspaceUuid } = start;
  let commit = { commit_sha: start.commitSha, commit_message: start.commitMessage, branch: start.branch };
  let outcome: 'completed' | 'failed' | 'cancelled' = 'failed';
  let message: string | null = null;
  let finalAppState: AppState = start.previousState;
  let started = false;

  try {
    state = 'resolving';
    const source = await acts.resolveDeploymentSource(id);
    if (source.ok)
      commit = { commit_sha: source.commitSha, commit_message: source.commitMessage, branch: source.branch };
    await emitDeployEvent(workspaceUuid, 'deploy_started', appUuid, { deployment_id: id, ...commit });
    started = true;
    if (!source.ok) {
      message = source.reason;
    } else {
      state = 'building';
      await acts.startDeploymentBuild(id);
      let image: string | null = null;
      for (;;) {
        const p = await acts.deploymentProgress(id);
        if (cancel || p.cancelRequested) {
          await acts.cancelDeploymentBuild(id);
          outcome = 'cancelled';
          message = 'the deployment was cancelled';
          break;
        }
        if (p.build.status === 'succeeded') {
          image = p.build.image;
          break;
        }
        if (p.build.status === 'failed') {
          message = p.build.reason;
          break;
        }
        if (p.build.status === 'cancelled') {
          outcome = 'cancelled';
          message = 'the deployment was cancelled';
          break;
        }
        await condition(() => cancel, POLL_INTERVAL);
      }
      if (image) {
        state = 'rolling-out';
        await acts.rolloutImage(appUuid, image);
        const live = await awaitLive(appUuid);
        finalAppState = live;
        // Histories recorded before the driver could say why a rollout failed carry no marker here.
        const reason = patched('rollout-failure-reason') ? await acts.rolloutFailure(appUuid) : null;
        if (reason) {
          // the new release did not take over; the app reads what still serves (the old release's live status)
          message = reason;
        } else if (live === 'failed') {
          message = 'the new release failed to start';
        } else {
          outcome = 'completed';
        }
      }
    }
  } catch (err) {
    if (isCancellation(err)) throw err;
    outcome = 'failed';
    message = failureMessage(err);
  }

  state = 'finishing';
  await acts.finishDeployment(id, outcome, outcome === 'completed' ? null : message);
  await acts.moveApp(appUuid, ['deploying'], finalAppState);
  if (!started) await emitDeployEvent(workspaceUuid, 'deploy_started', appUuid, { deployment_id: id, ...commit });
  await emitDeployEvent(workspaceUuid, 'deploy_ended', appUuid, {
    deployment_id: id,
    state: outcome,
    ...commit,
    message: outcome === 'completed' ? null : message,
  });
  try {
    await getExternalWorkflowHandle(appWorkflowId(appUuid)).signal(refreshSignal);
  } catch {
    // the app's workflow is gone (the app is being deleted)
  }
  state = outcome;
  return outcome;
}
