import { getExternalWorkflowHandle, log, setHandler } from '@temporalio/workflow';
import { appWorkflowId } from '../domain/apps';
import { stateQuery } from './common';
import { commandSignal, type AppCommand } from './app-steps';

export interface AppSendCommandInput {
  appUuid: string;
  command: AppCommand;
}

/** Where appSendCommand is, as its `state` query answers. */
export type AppSendCommandState = 'signalling' | 'delivered' | 'dropped';

/**
 * Delivers a state change a route accepted to the app's workflow. The route writes the
 * app's new state and this workflow's outbox row in one transaction, so the signal is
 * durable: a crash after the commit is recovered by the reconciler, and Temporal retries
 * the signal itself.
 */
export async function appSendCommand(input: AppSendCommandInput): Promise<void> {
  let state: AppSendCommandState = 'signalling';
  setHandler(stateQuery, () => state);
  try {
    await getExternalWorkflowHandle(appWorkflowId(input.appUuid)).signal(commandSignal, input.command);
    state = 'delivered';
  } catch (err) {
    // The app's workflow has ended (the app is being deleted): nothing is left to change.
    log.warn('app workflow not running; command dropped', {
      appUuid: input.appUuid,
      action: input.command.action,
      error: String(err),
    });
    state = 'dropped';
  }
}
