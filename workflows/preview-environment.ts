import {
  condition,
  continueAsNew,
  defineSignal,
  executeChild,
  patched,
  proxyActivities,
  setHandler,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { PREVIEW_CLONE, PREVIEW_WAKE_SIGNAL, type PreviewStatus } from '../domain/previews';
import { operationStart } from '../domain/search-attributes';
import { appDeploy } from './app-deploy';
import { stateQuery } from './common';
import { emit } from './events';
import { previewBuild, quickDb } from './activity-options';
import { failureMessage } from './failures';

const {
  readPreviewIntent,
  recordPreviewDeployed,
  recordPreviewFailed,
  expirePreview,
  destroyPreviewApp,
  queuePreviewDeployment,
  recordPreviewDeployment,
} = proxyActivities<Activities>(quickDb);

/** Creating the workload and deploying: a few tries, then the environment is `failed`. */
const { createPreviewApp, deployPreviewCommit } = proxyActivities<Activities>(previewBuild);

/** The preview's app: its row and capacity (database steps), its workload (a few tries, as a deployment's). */
const { insertPreviewApp, copyAppSettings, transition } = proxyActivities<Activities>(quickDb);
const { provisionApp } = proxyActivities<Activities>(previewBuild);

export const wakeSignal = defineSignal(PREVIEW_WAKE_SIGNAL);

/**
 * The preview's own app, made as steps of this workflow: a copy of its parent app (the row and
 * its capacity), the parent's settings copied onto it, its workload provisioned, then it
 * reads `deploying` until its first deployment ends.
 */
async function createPreviewAppSteps(environmentId: number): Promise<void> {
  const app = await insertPreviewApp(environmentId);
  if (!app) return;
  if (app.cloning) await copyAppSettings(app.parentAppUuid, app.appUuid, { ...PREVIEW_CLONE });
  await provisionApp(app.appUuid);
  await transition({ table: 'apps', uuid: app.appUuid, from: ['cloning'], to: 'deploying' });
}

/** Re-reads the environment at least this often, in case a wake signal was lost. */
const RECHECK_MS = 60 * 60 * 1000;

export interface PreviewEnvironmentInput {
  workspaceUuid: string;
  parentAppUuid: string;
  /** `pr-<number>` or `branch-<name>`. */
  key: string;
  /** Carried over continue-as-new. */
  handledGeneration?: number;
  provisioned?: boolean;
}

/**
 * deploy_ended of a failed commit: the reason is data.message, as on every deploy_ended;
 * histories from before that carried it as `error` (no marker).
 */
function failedDeployData(error: string): Record<string, unknown> {
  return patched('preview-deploy-ended-message') ? { status: 'failed', message: error } : { status: 'failed', error };
}

/**
 * One preview environment, for its whole life (`preview/<parent app uuid>/<key>`): the
 * row says what is wanted (head commit and deploy generation, destroying, expires_at);
 * the API writes it and sends `wake`. creating -> active (or failed with
 * deployment_error); a new commit or redeploy: updating -> active; closed, merged,
 * deleted or expires_at reached: destroying -> gone (the preview app is removed).
 */
export async function previewEnvironment(input: PreviewEnvironmentInput): Promise<'gone'> {
  let state: PreviewStatus | 'gone' = 'creating';
  let woken = false;
  let handled = input.handledGeneration ?? 0;
  let provisioned = input.provisioned ?? false;
  setHandler(stateQuery, () => state);
  setHandler(wakeSignal, () => {
    woken = true;
  });

  for (;;) {
    woken = false;
    const intent = await readPreviewIntent(input.parentAppUuid, input.key);
    if (!intent) {
      state = 'gone';
      return 'gone';
    }
    const id = intent.environmentId;
    if (intent.status === 'destroying') {
      state = 'destroying';
      await destroyPreviewApp(id);
      // A pull request reopened meanwhile wrote a new environment under the same key.
      if (await readPreviewIntent(input.parentAppUuid, input.key)) {
        await continueAsNew<typeof previewEnvironment>({
          workspaceUuid: input.workspaceUuid,
          parentAppUuid: input.parentAppUuid,
          key: input.key,
        });
      }
      state = 'gone';
      return 'gone';
    }
    if (intent.generation > handled) {
      state = handled === 0 ? 'creating' : 'updating';
      handled = intent.generation;
      const eventData = { preview_environment_id: id, commit_sha: intent.headSha };
      await emit(input.workspaceUuid, 'deploy_started', intent.appUuid, eventData);
      try {
        if (!provisioned) {
          // Histories from before the app was made as steps of this workflow ran them as one activity.
          if (patched('preview-app-steps')) await createPreviewAppSteps(id);
          else await createPreviewApp(id);
          provisioned = true;
        }
        // Histories from before each commit was a deployment of the preview app carry no marker here.
        if (patched('preview-app-deployments')) {
          // The commit is an app_deployments row of the preview app, run by the apps area's
          // appDeploy (build, rollout with the effective environment); its events are ours.
          const deploymentUuid = uuid4();
          await queuePreviewDeployment({ environmentId: id, deploymentUuid, commitSha: intent.headSha });
          await executeChild(appDeploy, {
            ...operationStart({
              operation: 'app-deploy',
              workspaceUuid: input.workspaceUuid,
              resourceUuid: intent.appUuid,
              subId: deploymentUuid,
            }),
            args: [{ deploymentUuid, previewEnvironmentId: id }],
          });
          const done = await recordPreviewDeployment({
            environmentId: id,
            generation: intent.generation,
            commitSha: intent.headSha,
            deploymentUuid,
          });
          await emit(
            input.workspaceUuid,
            'deploy_ended',
            intent.appUuid,
            done.ok
              ? { ...eventData, status: 'succeeded' }
              : { ...eventData, ...failedDeployData(done.error ?? 'the deployment failed') },
          );
          continue;
        }
        await deployPreviewCommit({ environmentId: id, commitSha: intent.headSha });
        await recordPreviewDeployed({ environmentId: id, generation: intent.generation, commitSha: intent.headSha });
        await emit(input.workspaceUuid, 'deploy_ended', intent.appUuid, { ...eventData, status: 'succeeded' });
      } catch (err) {
        const error = failureMessage(err);
        await recordPreviewFailed({ environmentId: id, generation: intent.generation, error });
        await emit(input.workspaceUuid, 'deploy_ended', intent.appUuid, { ...eventData, ...failedDeployData(error) });
      }
      continue;
    }
    state = intent.status;
    if (intent.expiresAt !== null && intent.expiresAt <= Date.now()) {
      await expirePreview(id);
      continue;
    }
    const wait = intent.expiresAt === null ? RECHECK_MS : Math.min(RECHECK_MS, intent.expiresAt - Date.now());
    await condition(() => woken, wait);
    // Nothing queued is lost here: a wake only asks for the row to be read again, which the new run does first.
    if (workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof previewEnvironment>({ ...input, handledGeneration: handled, provisioned });
    }
  }
}
