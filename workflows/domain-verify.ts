import { patched, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { VERIFY_MAX_ATTEMPTS, verifyDelayMinutes } from '../domain/domains';
import { stateQuery } from './common';
import { quickDb } from './activity-options';

const { checkDomainTxt, completeDomainVerification, failDomainVerification, startDomainCertificate } =
  proxyActivities<Activities>(quickDb);

export interface DomainVerifyInput {
  domainUuid: string;
}

export type DomainVerifyResult = 'verified' | 'failed' | 'stopped';

/** Where domainVerify is, as its `state` query answers. */
export type DomainVerifyState = 'checking' | 'stopped' | 'verified' | 'waiting' | 'failed';

/**
 * Verifies a custom domain (already `in_progress`): checks the TXT record, waiting
 * 1, 1, 2, 3, 5, ... minutes (capped at 60) between checks, until the token is found
 * (`verified`, and its certificate workflow started) or VERIFY_MAX_ATTEMPTS checks missed (`failed`). Stops quietly when the
 * domain is deleted or renamed meanwhile.
 */
export async function domainVerify(input: DomainVerifyInput): Promise<DomainVerifyResult> {
  let state: DomainVerifyState = 'checking';
  setHandler(stateQuery, () => state);
  for (let attempt = 1; attempt <= VERIFY_MAX_ATTEMPTS; attempt++) {
    state = 'checking';
    const outcome = await checkDomainTxt(input.domainUuid);
    if (outcome === 'stopped') {
      state = 'stopped';
      return 'stopped';
    }
    if (outcome === 'found') {
      state = (await completeDomainVerification(input.domainUuid)) ? 'verified' : 'stopped';
      // a verified domain gets its certificate (domainCertificate; nothing without an ACME directory)
      if (state === 'verified' && patched('domain-certificate')) await startDomainCertificate(input.domainUuid);
      return state as DomainVerifyResult;
    }
    if (attempt < VERIFY_MAX_ATTEMPTS) {
      state = 'waiting';
      await sleep(verifyDelayMinutes(attempt) * 60_000);
    }
  }
  state = (await failDomainVerification(input.domainUuid)) ? 'failed' : 'stopped';
  return state as DomainVerifyResult;
}
