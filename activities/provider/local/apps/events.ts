import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import { APP_SIGNALS, appWorkflowId } from '../../../../domain/apps';
import type { AppEventSink } from '../contracts';

/**
 * What the local data plane saw, told to the app's own workflow (`app/<uuid>`) as the
 * signals a cluster's event watcher would send: the workflow moves the state and emits the
 * webhook events. A signal to an app whose workflow is gone (deleted) is dropped.
 */
export function temporalAppEvents(temporal: Client, logger: Logger): AppEventSink {
  const signal = async (appUuid: string, name: string, arg?: unknown) => {
    try {
      const handle = temporal.workflow.getHandle(appWorkflowId(appUuid));
      await (arg === undefined ? handle.signal(name) : handle.signal(name, arg));
    } catch (err) {
      logger.warn(
        { appUuid, signal: name, err: (err as Error).message },
        'local data plane: signal to the app workflow not delivered',
      );
    }
  };
  return {
    health: (appUuid, event, detail) => signal(appUuid, APP_SIGNALS.health, { event, detail }),
    liveStatus: (appUuid, status) => signal(appUuid, APP_SIGNALS.liveStatus, { status }),
    traffic: (appUuid) => signal(appUuid, APP_SIGNALS.traffic),
  };
}
