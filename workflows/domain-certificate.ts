import { condition, continueAsNew, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { stateQuery } from './common';
import { acmeOrder } from './activity-options';

const { obtainDomainCertificate } = proxyActivities<Activities>(acmeOrder);

export interface DomainCertificateInput {
  domainUuid: string;
  /** Set by the run before, when its renewal timer fired: the certificate is renewed whatever its dates say. */
  renew?: boolean;
}

/** Wakes the workflow to look at its domain now (sent when the domain is verified, again after a rename). */
export const renewCertificateSignal = defineSignal('renew');

/** Where domainCertificate is, as its `state` query answers. */
export type DomainCertificateState = 'obtaining' | 'waiting' | 'stopped';

/**
 * The certificate of one verified custom domain (`domain-certificate/<domain uuid>`):
 * obtains it by ACME (the activity retries with backoff until it succeeds, recording each
 * failure on the domain), then waits on a timer until it is due for renewal (two thirds of
 * its lifetime) or a `renew` signal, and starts over as a new run (continue-as-new keeps
 * each run's history short). Ends when the domain is gone, no longer verified, or no ACME
 * directory is configured. Only the renewal time passes through the history, never a key.
 */
export async function domainCertificate(input: DomainCertificateInput): Promise<string> {
  let state: DomainCertificateState = 'obtaining';
  let woken = false;
  setHandler(stateQuery, () => state);
  setHandler(renewCertificateSignal, () => {
    woken = true;
  });
  const outcome = await obtainDomainCertificate(input.domainUuid, input.renew === true);
  if (outcome.kind === 'stopped') {
    state = 'stopped';
    return outcome.reason;
  }
  state = 'waiting';
  // a signal that came while obtaining was answered by it: only a later one wakes the wait
  woken = false;
  const signalled = await condition(() => woken, Math.max(1000, outcome.renewAt - Date.now()));
  return continueAsNew<typeof domainCertificate>({ domainUuid: input.domainUuid, renew: !signalled });
}
