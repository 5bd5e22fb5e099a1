import { randomBytes, randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { previewAppName } from '../../domain/previews';
import { App } from '../../entities/app';
import { PreviewEnvironment } from '../../entities/preview';
import { one, insertReturning, updateWhereReturning, type Changes } from '../../entities/sql';
import type { ApiDeps, Caller } from '../context';
import { checkAssignment } from '../placement';
import { effectiveTarget, PREVIEW_OPERATION, previewWorkflowId, wakePreview } from '../preview-envs';
import { conflict, notFound } from '../problem';
import { appForChange, ruleScope } from './apps';
import { snapshotOf, type Tx } from './audited-write';

/**
 * Changes a preview environment of the app (locked while read): `changes` decides from the
 * row, the entry names the environment by its own app, and its workflow is woken after commit.
 */
async function changePreview(
  tx: Tx,
  caller: Caller,
  input: { appUuid: string; id: number },
  action: string,
  changes: (found: PreviewEnvironment) => Parameters<typeof updateWhereReturning<PreviewEnvironment>>[2],
): Promise<PreviewEnvironment> {
  const app = await appForChange(tx, ruleScope(tx, caller), input.appUuid, false);
  const found = await tx.m.findOne(PreviewEnvironment, {
    where: { id: input.id, parent_app_uuid: app.uuid },
    lock: { mode: 'pessimistic_write' },
  });
  if (!found) throw notFound('preview environment');
  const [updated] = await updateWhereReturning(tx.m, PreviewEnvironment, changes(found), 'id = :id', { id: found.id });
  await tx.audit({
    action,
    resourceUuid: updated!.app_uuid,
    before: snapshotOf(found),
    after: snapshotOf(updated),
  });
  tx.afterCommit(() => wakePreview(tx.deps, app.uuid, found.key));
  return updated!;
}

/** DELETE /apps/{uuid}/preview_environments/{id}: the environment moves to destroying; its workflow removes its app, then it. */
export function destroyPreview(tx: Tx, caller: Caller, input: { appUuid: string; id: number }) {
  return changePreview(tx, caller, input, 'preview.delete', () => ({ status: 'destroying' }));
}

/** POST .../redeploy: the head commit again (a new generation; active or failed reads updating); not while destroying. */
export function redeployPreview(tx: Tx, caller: Caller, input: { appUuid: string; id: number }) {
  return changePreview(tx, caller, input, 'preview.redeploy', (found) => {
    if (found.status === 'destroying') throw conflict('the preview environment is being destroyed');
    return {
      generation: () => 'generation + 1',
      status: () => `CASE WHEN status IN ('active', 'failed') THEN 'updating' ELSE status END`,
    };
  });
}

/** The app a code-host delivery is for, with its preview settings (preview_configs). */
export interface DeliveryParent {
  uuid: string;
  workspace_uuid: string;
  project_uuid: string | null;
  resource_uuid: string;
  name: string;
  enabled: boolean;
  pull_requests: boolean;
  branch_patterns: string[];
  config_resource: string | null;
  config_project: string | null;
  use_parent_image: boolean;
  lifetime_hours: number | null;
  webhook_secret_sealed: string;
}

/** What a delivery says about the pull request or branch an environment previews. */
export interface DeliverySource {
  key: string;
  pullRequest: number | null;
  title: string;
  author: string;
  url: string;
  branch: string;
  baseBranch: string;
  sha: string;
}

/** What the code-host endpoint answers for a delivery. */
export interface HookOutcome {
  result: 'pong' | 'created' | 'updated' | 'destroying' | 'ignored';
  preview_environment_id?: number;
  reason?: string;
}

export const ignored = (reason: string): HookOutcome => ({ result: 'ignored', reason });

/**
 * `now()` plus the configured lifetime, as an SQL expression (a builder's SET/VALUES
 * expression takes no parameter; the hours are an integer column's value).
 */
const hoursFromNow = (hours: number) => () => `now() + make_interval(hours => ${Math.trunc(hours)})`;

/**
 * The audit entry of a delivery that changed an environment, in the transaction of the change:
 * the platform acting on the code host's behalf (the origin: actor system, source code-host). Its
 * resource is the environment's own app uuid (preview_environments.app_uuid), fixed for the
 * environment's life and the resource the preview routes record under too, so one environment's
 * history reads under one uuid; the parent app's uuid is in the create entry's diff
 * (parent_app_uuid). The diff covers the whole row (branch, head_sha, status, ...); a delivery
 * whose diff is empty changed nothing and records nothing.
 */
function auditDelivery(
  tx: Tx,
  parent: DeliveryParent,
  action: string,
  before: PreviewEnvironment | null,
  after: PreviewEnvironment,
): Promise<void> {
  return tx.audit({
    action,
    resourceType: 'preview',
    resourceUuid: after.app_uuid,
    appUuid: parent.uuid,
    before: snapshotOf(before),
    after: snapshotOf(after),
    skipWhenUnchanged: true,
  });
}

/**
 * A pull request opened or updated, a branch pushed: a new environment (creating, its workflow
 * enqueued) or a new head commit for one (updating; a new generation and lifetime). The parent's
 * row lock orders a delivery against DELETE /apps/{uuid}: an app being deleted takes no new
 * environment and no new commit (409, like the routes' "being deleted" conflicts), since its
 * deletion saga destroys the environments it finds; a close (destroyPreviewOnDelivery) is still taken.
 */
export async function upsertPreviewOnDelivery(
  tx: Tx,
  parent: DeliveryParent,
  s: DeliverySource,
  options: { create: boolean },
): Promise<HookOutcome> {
  const app = await tx.m.findOne(App, { where: { uuid: parent.uuid }, lock: { mode: 'pessimistic_write' } });
  if (!app || app.state === 'deleting') throw conflict('the app is being deleted');
  const existing = await tx.m.findOne(PreviewEnvironment, {
    where: { parent_app_uuid: parent.uuid, key: s.key },
    lock: { mode: 'pessimistic_write' },
  });
  if (!existing) {
    if (!options.create) return ignored('no preview environment for this pull request');
    return createPreviewOnDelivery(tx, parent, s);
  }
  if (existing.status === 'destroying')
    throw conflict('this preview environment is being destroyed; deliver the event again once it is gone');
  const newCommit = existing.head_sha !== s.sha;
  const changes: Changes<PreviewEnvironment> = {
    pull_request_title: s.title,
    pull_request_author: s.author,
    pull_request_url: s.url,
    base_branch: s.baseBranch,
    pull_request_state: 'open',
    head_sha: s.sha,
  };
  if (newCommit) {
    Object.assign(changes, {
      generation: () => 'generation + 1',
      last_commit_at: () => 'now()',
      expires_at: parent.lifetime_hours === null ? undefined : hoursFromNow(parent.lifetime_hours),
      // the row is locked: its status is the one read
      status: ['active', 'failed'].includes(existing.status) ? 'updating' : undefined,
    });
  }
  const [updated] = await updateWhereReturning(tx.m, PreviewEnvironment, changes, 'id = :id', { id: existing.id });
  await auditDelivery(tx, parent, 'preview.update', existing, updated!);
  if (newCommit) tx.afterCommit(() => wakePreview(tx.deps, parent.uuid, s.key));
  return { result: 'updated', preview_environment_id: existing.id };
}

/**
 * Whether the previous environment's workflow under this key is still finishing (its row is
 * already gone). A start now would attach to that run (conflict policy use-existing), so
 * the delivery is refused with 409 until it has closed; a closed run cannot come back.
 */
async function previousRunActive(deps: ApiDeps, parentAppUuid: string, key: string): Promise<boolean> {
  try {
    const run = await deps.temporal.workflow.getHandle(previewWorkflowId(parentAppUuid, key)).describe();
    return run.status.name === 'RUNNING';
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError))
      deps.logger.warn({ err, parentAppUuid, key }, 'could not describe the previous preview workflow');
    return false;
  }
}

async function createPreviewOnDelivery(tx: Tx, parent: DeliveryParent, s: DeliverySource): Promise<HookOutcome> {
  const { m, deps } = tx;
  if (await previousRunActive(deps, parent.uuid, s.key)) {
    throw conflict(
      'the previous preview environment of this pull request or branch is still being removed; deliver the event again in a moment',
    );
  }
  const target = effectiveTarget(parent, {
    resource_uuid: parent.config_resource,
    project_uuid: parent.config_project,
  });
  await checkAssignment(m, target.resourceUuid, target.projectUuid, 'config.resource_id');
  let appName = previewAppName(
    parent.name,
    s.pullRequest !== null ? { pullRequest: s.pullRequest } : { branch: s.branch },
  );
  // one name space across two tables: a UNION the builder does not express
  const taken = await one(
    m,
    `SELECT 1 FROM apps WHERE name = $1 UNION ALL SELECT 1 FROM preview_environments WHERE app_name = $1`,
    [appName],
  );
  if (taken) appName = `${appName}-${randomBytes(2).toString('hex')}`;
  const region = await one<{ domain: string }>(
    m,
    `SELECT r.domain FROM compute_resources c JOIN regions r ON r.id = c.region_id WHERE c.uuid = $1`,
    [target.resourceUuid],
  );
  const created = await insertReturning(
    m,
    PreviewEnvironment,
    {
      workspace_uuid: parent.workspace_uuid,
      parent_app_uuid: parent.uuid,
      key: s.key,
      app_uuid: randomUUID(),
      app_name: appName,
      resource_uuid: target.resourceUuid,
      project_uuid: target.projectUuid,
      use_parent_image: parent.use_parent_image,
      url: `https://${appName}.${region!.domain}`,
      pull_request_number: s.pullRequest,
      pull_request_title: s.title,
      pull_request_author: s.author,
      pull_request_url: s.url,
      branch: s.branch,
      base_branch: s.baseBranch,
      head_sha: s.sha,
      last_commit_at: () => 'now()',
      expires_at: parent.lifetime_hours === null ? null : hoursFromNow(parent.lifetime_hours),
    },
    { ignoreConflict: ['parent_app_uuid', 'key'] },
  );
  if (!created)
    throw conflict('another delivery created this preview environment at the same time; deliver the event again');
  await tx.enqueue({
    operation: PREVIEW_OPERATION,
    workflow: 'previewEnvironment',
    workspaceUuid: parent.workspace_uuid,
    resourceUuid: parent.uuid,
    subId: s.key,
    args: [{ workspaceUuid: parent.workspace_uuid, parentAppUuid: parent.uuid, key: s.key }],
  });
  await auditDelivery(tx, parent, 'preview.create', null, created);
  return { result: 'created', preview_environment_id: created.id };
}

/** A closed or merged pull request (`pr`), a deleted branch (null): the environment moves to destroying. */
export async function destroyPreviewOnDelivery(
  tx: Tx,
  parent: DeliveryParent,
  key: string,
  pr: { merged: boolean } | null,
): Promise<HookOutcome> {
  const found = await tx.m.findOne(PreviewEnvironment, {
    where: { parent_app_uuid: parent.uuid, key },
    lock: { mode: 'pessimistic_write' },
  });
  if (!found) return ignored('no preview environment to destroy');
  const closed: Changes<PreviewEnvironment> = pr
    ? { pull_request_state: 'closed', pull_request_merged: pr.merged, closed_at: () => 'now()' }
    : {};
  const [updated] = await updateWhereReturning(
    tx.m,
    PreviewEnvironment,
    { status: 'destroying', ...closed },
    'id = :id',
    { id: found.id },
  );
  await auditDelivery(tx, parent, 'preview.destroy', found, updated!);
  tx.afterCommit(() => wakePreview(tx.deps, parent.uuid, key));
  return { result: 'destroying', preview_environment_id: found.id };
}
