import { subPathProblem } from '../domain/data';
import { ADDON_LIVE_STATES, UNHEALTHY_STATES } from '../domain/addon-states';
import { unprocessable } from './problem';

/** Rules the commands of add-ons, services and cron jobs share. */

/** A ready add-on, service or cron job: live, or live but reported unhealthy (ADD-03, ADD-04). */
export const LIVE_STATES: string[] = [...ADDON_LIVE_STATES, ...UNHEALTHY_STATES];

/** BKP-03 and the per-type rules of the settings; every refusal is a 422 naming the field. */
export function checkSettings(
  type: string,
  planType: string,
  body: { backup_enabled?: boolean; public_access?: boolean; s3_enabled?: boolean },
): void {
  if (body.backup_enabled === true && planType === 'free') {
    throw unprocessable('backups are not available on the free plan: backup_enabled is always false there', [
      { path: 'body.backup_enabled', message: 'must be false on the free plan' },
    ]);
  }
  if (body.backup_enabled === true && !['postgres', 'mysql'].includes(type)) {
    throw unprocessable(`backups exist for postgres and mysql only, not ${type}`, [
      { path: 'body.backup_enabled', message: `not available for ${type}` },
    ]);
  }
  if (body.public_access === true && type === 'storage') {
    throw unprocessable('a storage volume cannot be publicly accessible', [
      { path: 'body.public_access', message: 'not available for storage' },
    ]);
  }
  if (body.s3_enabled === true && !['postgres', 'mysql'].includes(type)) {
    throw unprocessable(`s3_enabled (backups to object storage) exists for postgres and mysql only, not ${type}`, [
      { path: 'body.s3_enabled', message: `not available for ${type}` },
    ]);
  }
}

/** ADD-09 / ADD-10: a relative sub_path without . or .. segments or backslashes, on shared (RWX) storage only. */
export function checkSubPath(
  type: string,
  subPath: string | undefined,
  accessMode: string | undefined,
  field = 'body.sub_path',
): void {
  if (subPath === undefined) return;
  if (type !== 'storage')
    throw unprocessable('sub_path is for storage add-ons only', [{ path: field, message: 'only for type storage' }]);
  const problem = subPathProblem(subPath);
  if (problem) throw unprocessable(`invalid sub_path: ${problem}`, [{ path: field, message: problem }]);
  if (accessMode === 'exclusive') {
    throw unprocessable('sub_path is accepted only for shared (RWX) access', [
      { path: 'body.access_mode', message: 'must be shared when sub_path is set' },
    ]);
  }
}
