import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stateQuery } from './common';
import { longBuild, refusing, stackStep } from './activity-options';
import { failureMessage } from './failures';

const acts = proxyActivities<Activities>(refusing(stackStep, 'GitError', 'ComposeError'));
const services = proxyActivities<Activities>(longBuild);

export interface StackDeployInput {
  stackUuid: string;
  deploymentUuid: string;
}

/** Where stackDeploy is, as its `state` query answers. */
export type StackDeployState =
  'validating' | 'failed' | 'publishing' | 'building' | 'deploying' | 'running' | 'degraded';

/**
 * A stack deployment: validating (clone, analyze, required variables) -> publishing
 * (materialize services) -> building (images of services with a build section) ->
 * deploying (roll out every service) -> completed, or failed. The stack's computed state
 * follows: running when every service runs, degraded when some failed, failed when none.
 */
export async function stackDeploy(input: StackDeployInput): Promise<string> {
  const d = input.deploymentUuid;
  let state: StackDeployState = 'validating';
  setHandler(stateQuery, () => state);

  await acts.setStackDeploymentPhase(
    d,
    ['pending'],
    'validating',
    'cloning the repository and reading the compose file',
  );
  const validation = await acts.validateStackDeployment(d);
  if (!validation.ok) {
    await acts.finishStackDeployment(d, 'failed', 'validation failed');
    state = 'failed';
    return state;
  }

  state = 'publishing';
  await acts.setStackDeploymentPhase(d, ['validating'], 'publishing', 'materializing services');
  const items = await acts.publishStackServices(d);

  state = 'building';
  await acts.setStackDeploymentPhase(
    d,
    ['publishing'],
    'building',
    `building ${items.filter((i) => i.build).length} image(s)`,
  );
  const images = new Map<string, string>();
  const failed = new Set<string>();
  for (const item of items) {
    if (!item.build) {
      images.set(item.uuid, item.image!);
      continue;
    }
    try {
      images.set(item.uuid, await services.buildStackService(d, item));
    } catch (err) {
      failed.add(item.uuid);
      await acts.failStackService(item.uuid, `build failed: ${failureMessage(err)}`);
    }
  }

  state = 'deploying';
  await acts.setStackDeploymentPhase(
    d,
    ['building'],
    'deploying',
    `deploying ${items.length - failed.size} service(s)`,
  );
  for (const item of items) {
    if (failed.has(item.uuid)) continue;
    try {
      await services.deployStackService(item, images.get(item.uuid)!);
    } catch (err) {
      failed.add(item.uuid);
      await acts.failStackService(item.uuid, failureMessage(err));
    }
  }

  const anyRunning = failed.size < items.length;
  await acts.finishStackDeployment(
    d,
    anyRunning ? 'completed' : 'failed',
    failed.size === 0 ? 'all services running' : `${failed.size} of ${items.length} service(s) failed`,
  );
  state = anyRunning ? (failed.size === 0 ? 'running' : 'degraded') : 'failed';
  return state;
}
