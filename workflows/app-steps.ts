import { defineSignal, proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { APP_LIVE_STATES, APP_SIGNALS, type HealthEvent, type LiveStatus, type StateAction } from '../domain/apps';
import type { EventType } from '../domain/events';
import { emit } from './events';
import { activitiesSizedPerCall, appDriverStep, dataCopy, quickDb } from './activity-options';

/**
 * Steps the app workflows share (not a workflow type itself): database steps are short;
 * the driver calls get timeouts sized to their work.
 */
export const acts = activitiesSizedPerCall<Activities>((o) => proxyActivities<Activities>(o), quickDb, {
  provisionApp: appDriverStep,
  startApp: appDriverStep,
  stopApp: appDriverStep,
  restartApp: appDriverStep,
  scaleAppToZero: appDriverStep,
  rolloutImage: appDriverStep,
  cloneAppImage: dataCopy,
  cloneAppVolume: dataCopy,
  dropAppVolume: appDriverStep,
  deleteAppWorkload: appDriverStep,
  startDeploymentBuild: appDriverStep,
});

export interface AppCommand {
  commandId: string;
  action: StateAction | 'sync_ports';
}
export const commandSignal = defineSignal<[AppCommand]>(APP_SIGNALS.command);
export const trafficSignal = defineSignal(APP_SIGNALS.traffic);
export const healthSignal = defineSignal<[{ event: HealthEvent; detail: string | null }]>(APP_SIGNALS.health);
export const liveStatusSignal = defineSignal<[{ status: LiveStatus }]>(APP_SIGNALS.liveStatus);
/** Sent by a finished deployment: the app's state changed outside the app workflow. */
export const refreshSignal = defineSignal('appRefresh');

export const POLL_INTERVAL = '2 seconds';
/** How long a start may take before the app is taken as failed. */
export const START_POLLS = 450;

/** Polls the orchestrator until the app reports a live status (or the wait runs out: failed). */
export async function awaitLive(appUuid: string): Promise<LiveStatus> {
  for (let i = 0; i < START_POLLS; i++) {
    const status = await acts.appRuntimeStatus(appUuid);
    if ((APP_LIVE_STATES as readonly string[]).includes(status)) return status as LiveStatus;
    if (status !== 'starting') return 'failed';
    await sleep(POLL_INTERVAL);
  }
  return 'failed';
}

/** An app event with data.resource_name and data.labels of the app's compute resource (contract: Events 1). */
export async function emitAppEvent(appUuid: string, type: EventType, data: Record<string, unknown>): Promise<void> {
  const info = await acts.appInfo(appUuid);
  if (!info) return;
  await emit(info.workspaceUuid, type, appUuid, { ...data, resource_name: info.resourceName, labels: info.labels });
}
