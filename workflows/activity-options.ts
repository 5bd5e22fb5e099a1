import type { ActivityOptions, LocalActivityOptions, RetryPolicy } from '@temporalio/workflow';

/**
 * The activity options every workflow picks from (`proxyActivities<Activities>(quickDb)`),
 * so a timeout or retry policy is declared once and named for what it is for.
 */

/** Retried with backoff until it succeeds (a database write, or a driver call that must land). */
const UNTIL_DONE: RetryPolicy = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' };
/** Retried with backoff a bounded number of times: a driver that keeps refusing fails the resource. */
const BOUNDED: RetryPolicy = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '30 seconds',
  maximumAttempts: 6,
};
/** A long step (a build, a publish, a deploy) tried a few times. */
const FEW_TRIES: RetryPolicy = {
  initialInterval: '2 seconds',
  backoffCoefficient: 2,
  maximumInterval: '1 minute',
  maximumAttempts: 3,
};

/** Database-only steps: a minute each, retried until they succeed. */
export const quickDb: ActivityOptions = { startToCloseTimeout: '1 minute', retry: UNTIL_DONE };
/** Emitting an event (one insert): retried until it lands. */
export const eventEmit: ActivityOptions = { startToCloseTimeout: '30 seconds', retry: UNTIL_DONE };
/** Emitting an event in the workflow's own task (a local activity: no activity task, no second workflow task). */
export const localEventEmit: LocalActivityOptions = { startToCloseTimeout: '30 seconds', retry: UNTIL_DONE };
/** Driver calls that take minutes and must land (an add-on's data destroyed or restored). */
export const patientDriverCall: ActivityOptions = { startToCloseTimeout: '5 minutes', retry: UNTIL_DONE };
/** Network driver calls: two minutes each, retried a bounded number of times. */
export const driverCall: ActivityOptions = { startToCloseTimeout: '2 minutes', retry: BOUNDED };
/** Quick driver calls (a bucket, a static site's resources), retried a bounded number of times. */
export const quickDriverCall: ActivityOptions = { startToCloseTimeout: '1 minute', retry: BOUNDED };
/** Builds and publishes: ten minutes each, a few tries. */
export const longBuild: ActivityOptions = { startToCloseTimeout: '10 minutes', retry: FEW_TRIES };
/** A preview's app created or its commit deployed: fifteen minutes each, a few tries. */
export const previewBuild: ActivityOptions = { startToCloseTimeout: '15 minutes', retry: FEW_TRIES };
/** Cleaning up what a deleted resource left behind: patient, twenty tries. */
export const cleanup: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 20 },
};
/** A sweep over every add-on's live status: tried twice, the next sweep comes anyway. */
export const sweep: ActivityOptions = { startToCloseTimeout: '2 minutes', retry: { maximumAttempts: 2 } };
/** A cron job's run: once, up to thirty minutes (a failed run is not repeated). */
export const singleRun: ActivityOptions = { startToCloseTimeout: '30 minutes', retry: { maximumAttempts: 1 } };
/** Reading a stack's source: tried twice. */
export const sourceRead: ActivityOptions = {
  startToCloseTimeout: '3 minutes',
  retry: { initialInterval: '1 second', maximumAttempts: 2 },
};
/** A stack deployment's steps: five minutes each, five tries. */
export const stackStep: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 5 },
};

/**
 * App steps that call the data plane and return once the work is accepted (a workload
 * provisioned, started, restarted, rolled out; a release copied): five minutes each, retried
 * until they land, each call idempotent on the driver's side.
 */
export const appDriverStep: ActivityOptions = { startToCloseTimeout: '5 minutes', retry: UNTIL_DONE };
/**
 * Copies whose length grows with the data (a clone's volume): no overall limit worth the
 * name, a heartbeat at least every 30 seconds instead. A retry joins the copy a live
 * attempt is still making, or starts over in a fresh staging folder: it never deletes one
 * being written.
 */
export const dataCopy: ActivityOptions = {
  startToCloseTimeout: '6 hours',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 10 },
};
/** A database cluster created (initdb and a first start): ten minutes, a heartbeat every 30 seconds, retried. */
export const dataInit: ActivityOptions = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: UNTIL_DONE,
};
/**
 * An ACME order (account, order, HTTP-01, finalize): five minutes each, heartbeating while it
 * waits on the ACME server, retried from a minute apart up to every two hours until it
 * succeeds (a certificate is needed as long as the domain is; Let's Encrypt allows five
 * failed validations per name an hour).
 */
export const acmeOrder: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '1 minute', backoffCoefficient: 2, maximumInterval: '2 hours' },
};

/** The preset, with these error types failing at once instead of being retried. */
export function refusing(options: ActivityOptions, ...nonRetryableErrorTypes: string[]): ActivityOptions {
  return { ...options, retry: { ...options.retry, nonRetryableErrorTypes } };
}

/**
 * Activities with options per call: the steps named in `sized` get theirs, every other
 * step `rest`. One table per workflow family says which steps do real work and how long it
 * may take (a Proxy: deterministic, it only picks which proxy answers the name).
 */
export function activitiesSizedPerCall<A extends object>(
  proxy: (options: ActivityOptions) => A,
  rest: ActivityOptions,
  sized: Partial<Record<keyof A, ActivityOptions>>,
): A {
  const base = proxy(rest);
  const byOptions = new Map<ActivityOptions, A>();
  const proxyFor = (options: ActivityOptions) => {
    let found = byOptions.get(options);
    if (!found) byOptions.set(options, (found = proxy(options)));
    return found;
  };
  return new Proxy(base, {
    get(target, name, receiver) {
      const options = typeof name === 'string' ? sized[name as keyof A] : undefined;
      return Reflect.get(options ? proxyFor(options) : target, name, receiver);
    },
  });
}
