import {
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  ParentClosePolicy,
  patched,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import {
  deploysBranchHeadAtCreation,
  FREE_PLAN_IDLE_MS,
  HEALTH_EVENT_STATE,
  isFreePlan,
  type AppState,
  type HealthEvent,
  type LiveStatus,
} from '../domain/apps';
import { operationStart } from '../domain/search-attributes';
import { appDeploy } from './app-deploy';
import { stateQuery } from './common';
import {
  acts,
  awaitLive,
  commandSignal,
  emitAppEvent,
  healthSignal,
  liveStatusSignal,
  refreshSignal,
  trafficSignal,
  type AppCommand,
} from './app-steps';

export interface AppLifecycleInput {
  appUuid: string;
  /** Set when the app already runs (a clone, or continue-as-new). */
  provisioned?: boolean;
}

const AWAKE: AppState[] = ['started', 'running', 'failed', 'problem'];

/** Continue-as-new waits until every queued signal is handled (histories from before continued at once). */
const CONTINUE_WHEN_DRAINED = 'continue-as-new-when-drained';

/**
 * The app's own workflow (`app/<uuid>`), for the app's whole life: provisions it
 * (pending -> assigned -> start_scheduled -> started -> the live status; a public_git or
 * github app then deploys its branch head, as its own `app-deploy` workflow), then carries out
 * the state changes people ask for (PATCH /apps/{uuid}/state, as signals), reacts to the
 * data plane (traffic, health events, live status) and, on the free plan, puts the app to
 * sleep after 30 minutes without traffic and wakes it on the next request. Ends when the
 * app is deleted (appDelete cancels it).
 */
export async function appLifecycle(input: AppLifecycleInput): Promise<void> {
  const { appUuid } = input;
  let phase: 'provisioning' | 'supervising' | 'ended' = input.provisioned ? 'supervising' : 'provisioning';
  let local: AppState = 'pending';
  const commands: AppCommand[] = [];
  const health: Array<{ event: HealthEvent; detail: string | null }> = [];
  let traffic = false;
  let live: LiveStatus | null = null;
  let refresh = false;
  setHandler(stateQuery, () => `${phase}:${local}`);
  setHandler(commandSignal, (c) => {
    commands.push(c);
  });
  setHandler(trafficSignal, () => {
    traffic = true;
  });
  setHandler(healthSignal, (h) => {
    health.push(h);
  });
  setHandler(liveStatusSignal, ({ status }) => {
    live = status;
  });
  setHandler(refreshSignal, () => {
    refresh = true;
  });

  const move = async (from: AppState[], to: AppState) => {
    const r = await acts.moveApp(appUuid, from, to);
    if (r.state) local = r.state;
    return r.moved;
  };

  try {
    let info = await acts.appInfo(appUuid);
    if (!info) return;
    local = info.state;
    const free = () => isFreePlan(info!.planType);

    if (!input.provisioned) {
      try {
        await acts.provisionApp(appUuid);
        await move(['pending'], 'assigned');
        await move(['assigned'], 'start_scheduled');
        await acts.startApp(appUuid);
        await move(['start_scheduled'], 'started');
        await move(['started'], await awaitLive(appUuid));
      } catch (err) {
        if (isCancellation(err)) throw err;
        await move(['pending', 'assigned', 'start_scheduled', 'started'], 'failed');
      }
      phase = 'supervising';
      // A public_git / github app deploys its branch head at once (a git_push app: its first push).
      if (
        info.deploymentMethod &&
        deploysBranchHeadAtCreation(info.deploymentMethod) &&
        patched('initial-deployment')
      ) {
        const deploymentUuid = await acts.createInitialDeployment(appUuid);
        if (deploymentUuid) {
          await startChild(appDeploy, {
            ...operationStart({
              operation: 'app-deploy',
              workspaceUuid: info.workspaceUuid,
              resourceUuid: appUuid,
              subId: deploymentUuid,
            }),
            args: [{ deploymentUuid }],
            parentClosePolicy: ParentClosePolicy.ABANDON,
          });
        }
      }
    }

    const start = async (from: AppState) => {
      try {
        await acts.provisionApp(appUuid);
        await acts.startApp(appUuid);
        if (await move([from], 'started')) {
          await emitAppEvent(appUuid, 'app_state_changed', { state: 'started' });
          await move(['started'], await awaitLive(appUuid));
        }
      } catch (err) {
        if (isCancellation(err)) throw err;
        if (await move([from, 'started'], 'failed'))
          await emitAppEvent(appUuid, 'app_state_changed', { state: 'failed' });
      }
    };

    const run = async (c: AppCommand) => {
      switch (c.action) {
        case 'start':
        case 'schedule_start':
          return start('start_scheduled');
        case 'stop':
        case 'schedule_stop':
          try {
            await acts.stopApp(appUuid);
            if (await move(['stop_scheduled'], 'stopped'))
              await emitAppEvent(appUuid, 'app_state_changed', { state: 'stopped' });
          } catch (err) {
            if (isCancellation(err)) throw err;
            if (await move(['stop_scheduled'], 'failed'))
              await emitAppEvent(appUuid, 'app_state_changed', { state: 'failed' });
          }
          return;
        case 'restart':
          await emitAppEvent(appUuid, 'app_state_changed', { state: 'restart_scheduled' });
          try {
            await acts.restartApp(appUuid);
            if (await move(['restart_scheduled'], 'started')) {
              await emitAppEvent(appUuid, 'app_state_changed', { state: 'started' });
              await move(['started'], await awaitLive(appUuid));
            }
          } catch (err) {
            if (isCancellation(err)) throw err;
            if (await move(['restart_scheduled', 'started'], 'failed'))
              await emitAppEvent(appUuid, 'app_state_changed', { state: 'failed' });
          }
          return;
        case 'sync_ports':
          try {
            await acts.syncAppPorts(appUuid);
          } catch (err) {
            if (isCancellation(err)) throw err;
          }
          return;
      }
    };

    /** Free-plan wake-up on traffic: no event (contract: Events 3). */
    const wake = async () => {
      if (!(await move(['sleeping'], 'started'))) return;
      try {
        await acts.startApp(appUuid);
        await move(['started'], await awaitLive(appUuid));
      } catch (err) {
        if (isCancellation(err)) throw err;
        await move(['started'], 'failed');
      }
    };

    for (;;) {
      const idleTimer = free() && local === 'running';
      const pending = () => commands.length > 0 || traffic || health.length > 0 || live !== null || refresh;
      // condition() without a timeout resolves to nothing: only the idle timer can time out.
      // the idle time comes from the activity (operator setting); histories from before it carry none
      const woke = idleTimer
        ? await condition(pending, info.idleMs ?? FREE_PLAN_IDLE_MS)
        : (await condition(pending), true);
      if (!woke) {
        // the idle time (30 minutes by default) without traffic: sleeping, scaled to zero, no event (contract: moves table).
        if (await move(['running'], 'sleeping')) {
          try {
            await acts.scaleAppToZero(appUuid);
          } catch (err) {
            if (isCancellation(err)) throw err;
            // the data plane would not scale it down: it stays up and reads running again
            await move(['sleeping'], 'running');
          }
        }
        continue;
      }
      if (refresh) {
        refresh = false;
        info = await acts.appInfo(appUuid);
        if (!info) return;
        local = info.state;
      }
      if (traffic) {
        traffic = false;
        if (local === 'sleeping') await wake();
      }
      while (commands.length > 0) await run(commands.shift()!);
      while (health.length > 0) {
        const h = health.shift()!;
        const to = HEALTH_EVENT_STATE[h.event];
        if (to) await move(AWAKE, to);
        await emitAppEvent(appUuid, h.event, h.detail ? { message: h.detail } : {});
      }
      if (live !== null) {
        const status: LiveStatus = live;
        live = null;
        await move(['running', 'failed', 'problem'], status);
      }
      if (workflowInfo().continueAsNewSuggested) {
        // Histories from before the drain carry no marker: they continued as new at once.
        if (!patched(CONTINUE_WHEN_DRAINED)) await continueAsNew<typeof appLifecycle>({ appUuid, provisioned: true });
        // A signal that came in during this iteration's steps is still queued: the new run would
        // never see it, so the next iteration handles it first. Checked in the same activation as
        // the continue-as-new, after which no handler of this run can run again.
        await condition(allHandlersFinished);
        if (!pending()) await continueAsNew<typeof appLifecycle>({ appUuid, provisioned: true });
      }
    }
  } catch (err) {
    if (isCancellation(err)) {
      phase = 'ended';
      return;
    }
    throw err;
  }
}
