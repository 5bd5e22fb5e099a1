import { log, ParentClosePolicy, patched, setHandler, sleep, startChild, uuid4 } from '@temporalio/workflow';
import type { CloneFlags } from '../activities/apps';
import { APP_OPERATION } from '../domain/apps';
import { operationStart } from '../domain/search-attributes';
import { appLifecycle } from './app';
import { acts, awaitLive } from './app-steps';
import { stateQuery } from './common';
import { failureMessage } from './failures';

export interface AppCloneInput {
  workspaceUuid: string;
  sourceUuid: string;
  targetUuid: string;
  useParentImage: boolean;
  flags: CloneFlags;
  /** Add-ons of the source to copy onto the clone (with their data when clone_data). */
  addons: Array<{ uuid: string; clone_data: boolean }>;
  cronjobs: string[];
}

/** How many times a cloned add-on's status is read before the clone gives up on it. */
export const ADDON_READY_POLLS = 60;

/** A cloned add-on starts `creating`: polls its live status (backing off) until it is ready. */
async function awaitAddonReady(addonUuid: string): Promise<void> {
  let delay = 1;
  for (let i = 0; i < ADDON_READY_POLLS; i++) {
    if ((await acts.refreshAddonStatus(addonUuid)).ready) return;
    await sleep(`${delay} seconds`);
    delay = Math.min(delay * 2, 30);
  }
  throw new Error(`the cloned add-on ${addonUuid} did not become ready`);
}

interface Compensation {
  name: string;
  /** Idempotent: undoes its step whether the step ran, half ran or never ran. */
  run: () => Promise<void>;
}

/**
 * Runs a failed clone's compensations in order, each on its own: one that fails is logged
 * (with the target and its name) and the rest still run, so one stuck undo does not leave
 * the others' resources behind.
 */
async function compensate(targetUuid: string, compensations: Compensation[]): Promise<void> {
  for (const c of compensations) {
    try {
      await c.run();
    } catch (err) {
      log.error('clone compensation failed', { targetUuid, compensation: c.name, error: failureMessage(err) });
    }
  }
}

/** Where appClone is, as its `state` query answers. */
export type AppCloneState =
  | 'provisioning'
  | 'cloning-image'
  | 'cloning-volume'
  | 'copying-settings'
  | 'cloning-addons'
  | 'cloning-cronjobs'
  | 'starting'
  | 'compensating'
  | 'failed'
  | 'awaiting-live'
  | 'cloned';

/**
 * Clones an app as a saga (`app-clone/<target>`): the target app reads `cloning` while
 * each step runs, and each step registers its compensation before the next begins. On
 * any failure the compensations run in reverse and the half-made target is discarded:
 * the source is never written to. On success the clone gets its own app workflow.
 */
export async function appClone(input: AppCloneInput): Promise<{ outcome: 'cloned' | 'failed'; reason: string | null }> {
  const { sourceUuid, targetUuid } = input;
  let state: AppCloneState = 'provisioning';
  setHandler(stateQuery, () => state);
  const compensations: Compensation[] = [];
  try {
    compensations.unshift({ name: 'delete workload', run: () => acts.deleteAppWorkload(targetUuid) });
    await acts.provisionApp(targetUuid);

    state = 'cloning-image';
    await acts.cloneAppImage(sourceUuid, targetUuid, input.useParentImage);

    state = 'cloning-volume';
    compensations.unshift({ name: 'drop volume', run: () => acts.dropAppVolume(targetUuid) });
    await acts.cloneAppVolume(sourceUuid, targetUuid);

    state = 'copying-settings';
    compensations.unshift({ name: 'clear settings', run: () => acts.clearAppSettings(targetUuid) });
    await acts.copyAppSettings(sourceUuid, targetUuid, input.flags);

    // Histories recorded before add-ons and cron jobs were cloned carry no marker here.
    if (patched('app-clone-addons-cronjobs')) {
      for (const addon of input.addons) {
        state = 'cloning-addons';
        const copy = uuid4();
        compensations.unshift({ name: 'drop cloned add-on', run: () => acts.dropClonedAddon(copy) });
        await acts.cloneAddon({
          sourceUuid: addon.uuid,
          targetAppUuid: targetUuid,
          targetUuid: copy,
          withData: addon.clone_data,
        });
        await awaitAddonReady(copy);
      }
      for (const cronjob of input.cronjobs) {
        state = 'cloning-cronjobs';
        const copy = uuid4();
        compensations.unshift({ name: 'drop cloned cron job', run: () => acts.dropClonedCronjob(copy) });
        await acts.cloneCronjob({ sourceUuid: cronjob, targetAppUuid: targetUuid, targetUuid: copy });
      }
    }

    state = 'starting';
    compensations.unshift({ name: 'stop', run: () => acts.stopApp(targetUuid) });
    await acts.startApp(targetUuid);
    const moved = await acts.moveApp(targetUuid, ['cloning'], 'started');
    if (!moved.moved) throw new Error(`the clone left the cloning state (${moved.state ?? 'gone'})`);
  } catch (err) {
    state = 'compensating';
    await compensate(targetUuid, [
      ...compensations,
      {
        name: 'discard clone',
        run: async () => {
          await acts.discardClone(targetUuid);
        },
      },
    ]);
    state = 'failed';
    return { outcome: 'failed', reason: failureMessage(err) };
  }

  state = 'awaiting-live';
  await acts.moveApp(targetUuid, ['started'], await awaitLive(targetUuid));
  await startChild(appLifecycle, {
    ...operationStart({ operation: APP_OPERATION, workspaceUuid: input.workspaceUuid, resourceUuid: targetUuid }),
    args: [{ appUuid: targetUuid, provisioned: true }],
    parentClosePolicy: ParentClosePolicy.ABANDON,
  });
  state = 'cloned';
  return { outcome: 'cloned', reason: null };
}
