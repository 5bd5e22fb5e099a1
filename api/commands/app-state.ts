import { randomUUID } from 'node:crypto';
import { stateMove, type StateAction } from '../../domain/apps';
import { App } from '../../entities/app';
import { PreviewEnvironment } from '../../entities/preview';
import { updateReturning } from '../../entities/sql';
import type { Caller } from '../context';
import { wakePreview } from '../preview-envs';
import { conflict, unprocessable } from '../problem';
import { appForChange, ruleScope } from './apps';
import { snapshotOf, type Tx } from './audited-write';

/** Sends a command to the app's workflow durably (outbox row in the caller's transaction). */
export function enqueueAppCommand(
  tx: Pick<Tx, 'enqueue'>,
  workspaceUuid: string,
  appUuid: string,
  action: StateAction | 'sync_ports',
  subId?: string,
) {
  const commandId = randomUUID();
  return tx.enqueue({
    // A fixed subId coalesces commands while one is in flight (the app workflow reads the database when it runs it).
    operation: 'app-command',
    workflow: 'appSendCommand',
    workspaceUuid,
    resourceUuid: appUuid,
    subId: subId ?? commandId,
    args: [{ appUuid, command: { commandId, action } }],
  });
}

/** Moves the locked app to `state` and records the move under `action`. */
async function moveApp(tx: Tx, app: App, state: string, action: string): Promise<App> {
  const after = (await updateReturning(tx.m, App, app.uuid, { state }))!;
  await tx.audit({ action, resourceUuid: app.uuid, before: snapshotOf(app), after: snapshotOf(after) });
  return after;
}

/** PATCH /apps/{uuid}/state: the move the action allows from the app's state (domain/apps.ts), sent to its workflow. */
export async function changeAppState(
  tx: Tx,
  caller: Caller,
  input: { uuid: string; action: StateAction },
): Promise<App> {
  const app = await appForChange(tx, ruleScope(tx, caller), input.uuid);
  const to = stateMove(input.action, app.state);
  if (!to) {
    throw unprocessable(`an app in state ${app.state} cannot ${input.action.replace('_', ' ')}`, [
      { path: 'body.action', message: `not allowed from ${app.state}` },
    ]);
  }
  const after = await moveApp(tx, app, to, 'app.state_change');
  await enqueueAppCommand(tx, caller.workspaceUuid, app.uuid, input.action);
  return after;
}

/**
 * DELETE /apps/{uuid}: the app moves to deleting. A preview environment's app goes the way
 * of its environment: the environment's own workflow removes the app and the environment
 * together (as DELETE of the preview does); any other app's delete workflow is enqueued.
 */
export async function deleteApp(tx: Tx, caller: Caller, uuid: string): Promise<App> {
  const app = await appForChange(tx, ruleScope(tx, caller), uuid);
  if (app.state === 'cloning') throw conflict('the app is being cloned; delete it once the clone has finished');
  const after = await moveApp(tx, app, 'deleting', 'app.delete');
  const destroyed = await tx.m
    .createQueryBuilder()
    .update(PreviewEnvironment)
    .set({ status: 'destroying' })
    .where('app_uuid = :uuid', { uuid: app.uuid })
    .returning(['parent_app_uuid', 'key'])
    .updateEntity(false)
    .execute();
  const preview = (destroyed.raw as Array<Pick<PreviewEnvironment, 'parent_app_uuid' | 'key'>>)[0];
  if (preview) {
    tx.afterCommit(() => wakePreview(tx.deps, preview.parent_app_uuid, preview.key));
  } else {
    await tx.enqueue({
      operation: 'app-delete',
      workflow: 'appDelete',
      workspaceUuid: caller.workspaceUuid,
      resourceUuid: app.uuid,
      args: [{ appUuid: app.uuid }],
    });
  }
  return after;
}
