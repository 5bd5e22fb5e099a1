import { randomUUID } from 'node:crypto';
import { DEPLOYABLE_STATES, isGitMethod } from '../../domain/apps';
import { AppDeployment } from '../../entities/app';
import { insertReturning, updateReturning } from '../../entities/sql';
import type { Caller } from '../context';
import { conflict, notFound, unprocessable } from '../problem';
import { appForChange, ruleScope } from './apps';
import { snapshotOf, type Tx } from './audited-write';

/**
 * Deploys an app, as POST /apps/{uuid}/deployments: the app (visible to the caller, in a
 * deployable state, no deployment in progress) gets a pending deployment of the commit
 * given (git methods; else the branch head, resolved by the workflow), its audit entry
 * (`deployment.create`, the caller as actor) and its `app-deploy` workflow via the outbox.
 * Also the git endpoint's post-receive callback (api/git-push-hook.ts), with the pushed commit.
 */
export async function createDeployment(
  tx: Tx,
  caller: Caller,
  input: { appUuid: string; commit_sha?: string; branch?: string },
): Promise<AppDeployment> {
  const app = await appForChange(tx, ruleScope(tx, caller), input.appUuid);
  if (app.state === 'deploying') throw conflict('a deployment of this app is in progress');
  if (!(DEPLOYABLE_STATES as readonly string[]).includes(app.state)) {
    throw unprocessable(`an app in state ${app.state} cannot be deployed`, [
      { path: 'path.uuid', message: `app is ${app.state}` },
    ]);
  }
  const git = isGitMethod(app.deployment_method);
  if (!git && (input.commit_sha || input.branch)) {
    throw unprocessable(
      `a ${app.deployment_method} app has no commits: commit_sha and branch are for git deployment methods`,
      [{ path: input.commit_sha ? 'body.commit_sha' : 'body.branch', message: 'only for git deployment methods' }],
    );
  }
  // ON CONFLICT DO NOTHING: the uuid is fresh, so the one conflict possible is a deployment in progress (a unique index)
  const deployment = await insertReturning(
    tx.m,
    AppDeployment,
    {
      uuid: randomUUID(),
      app_uuid: app.uuid,
      workspace_uuid: caller.workspaceUuid,
      deployment_method: app.deployment_method,
      commit_sha: git ? (input.commit_sha ?? null) : null,
      branch: git ? (input.branch ?? (app.deployment_config.branch as string | undefined) ?? 'main') : null,
    },
    { ignoreConflict: true },
  );
  if (!deployment) throw conflict('a deployment of this app is in progress');
  await tx.audit({ action: 'deployment.create', resourceUuid: deployment.uuid, after: snapshotOf(deployment) });
  await tx.enqueue({
    operation: 'app-deploy',
    workflow: 'appDeploy',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: app.uuid,
    subId: deployment.uuid,
    args: [{ deploymentUuid: deployment.uuid }],
  });
  return deployment;
}

/** POST .../deployments/{deployment_uuid}/cancel: a pending or running deployment reads cancelling (its workflow reads it at every poll). */
export async function cancelDeployment(
  tx: Tx,
  caller: Caller,
  input: { appUuid: string; deploymentUuid: string },
): Promise<AppDeployment> {
  const app = await appForChange(tx, ruleScope(tx, caller), input.appUuid, false);
  const found = await tx.m.findOne(AppDeployment, {
    where: { uuid: input.deploymentUuid, app_uuid: app.uuid },
    lock: { mode: 'pessimistic_write' },
  });
  if (!found) throw notFound('deployment');
  if (!['pending', 'running', 'cancelling'].includes(found.state)) {
    throw unprocessable(`a ${found.state} deployment cannot be cancelled`, [
      { path: 'path.deployment_uuid', message: `deployment is ${found.state}` },
    ]);
  }
  const cancelling = (await updateReturning(tx.m, AppDeployment, found.uuid, { state: 'cancelling' }))!;
  await tx.audit({
    action: 'deployment.cancel',
    resourceUuid: found.uuid,
    before: snapshotOf(found),
    after: snapshotOf(cancelling),
  });
  return cancelling;
}
