import { ApplicationFailure } from '@temporalio/workflow';

/**
 * Why a step failed, for users and for a resource's failure_reason: the message of the
 * first ApplicationFailure down the cause chain (what the activity threw), else of the
 * innermost cause (a timeout, a cancellation), else the error itself.
 */
export function failureMessage(err: unknown): string {
  let cause: unknown = err;
  while (cause instanceof Error && !(cause instanceof ApplicationFailure) && cause.cause instanceof Error)
    cause = cause.cause;
  return cause instanceof Error ? cause.message : String(err);
}
