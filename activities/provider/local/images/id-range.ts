import { createHash } from 'node:crypto';
import { APP_UID_BASE, APP_UID_RANGE } from '../../../../platform/local-layout';

/**
 * Each app's range of host ids for its user namespaces: a Dockerfile build's (its root is
 * the range's first id) and its containers' (ids 0..65535 inside are the range), so an
 * image's USER other than root runs as an id of the app's own. The range lies above every
 * app uid and volume gid. A stable function of the app's uuid (a restart of Berth finds the
 * same owner on disk); two apps can hash to one range (about 65,000 of them).
 */

/** Ids per app's range (0..65535 inside its namespaces). */
export const APP_ID_COUNT = 65536;
/** First host id of the ranges: above every app uid. */
const APP_ID_BASE = APP_UID_BASE + APP_UID_RANGE;
/** How many ranges fit below 2^32 - 2 (the kernel's invalid and overflow ids stay out). */
const APP_ID_SLOTS = Math.floor((2 ** 32 - 2 - APP_ID_BASE) / APP_ID_COUNT) - 1;

/** The host id the app's namespaces' root is (its 65536 ids follow). */
export function appIdBase(appUuid: string): number {
  // `build:` kept from when only builds had a range: existing build spaces keep their owner
  const n = parseInt(createHash('sha256').update(`build:${appUuid}`).digest('hex').slice(0, 8), 16);
  return APP_ID_BASE + (n % APP_ID_SLOTS) * APP_ID_COUNT;
}
