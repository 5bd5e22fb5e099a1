import type { RestoreChoice } from '../domain/data';
import { rows, type Db } from '../entities/sql';
import { unprocessable } from './problem';
import type { RestoreBody } from './schemas/addons';
import type { AddonRow } from './views/addons';
import { iso } from './views/common';

/** The backups of a postgres add-on or service and the restore a request asks for (BKP-01..06). */

/** The backups view (BKP-01/02): the setting, what runs, the recovery window and the backups (newest first). */
export async function backupsOf(db: Db, row: AddonRow) {
  const list = await rows<{ name: string; taken_at: Date; size: string }>(
    db,
    `SELECT name, taken_at, size FROM addon_backups WHERE addon_uuid = $1 ORDER BY taken_at DESC`,
    [row.uuid],
  );
  const earliest = list.length > 0 ? list[list.length - 1]!.taken_at : null;
  return {
    backup_enabled: row.plan_type === 'free' ? false : row.backup_enabled,
    backup_active: row.backup_active,
    recovery_window: earliest ? { earliest: iso(earliest)!, latest: new Date().toISOString() } : null,
    backups: list.map((b) => ({ name: b.name, created_at: iso(b.taken_at)!, size: Number(b.size) })),
  };
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * What a restore request restores (BKP-04..06): a backup by name, a point in time inside the
 * recovery window, or the latest backup; every refusal is a 422 naming the field.
 */
export async function restoreChoice(db: Db, row: AddonRow, b: RestoreBody): Promise<RestoreChoice> {
  if (row.type !== 'postgres')
    throw unprocessable(`restore is available for postgres only, not ${row.type}`, [
      { path: 'path.id', message: 'not a postgres database' },
    ]);
  if (row.replica_of)
    throw unprocessable('restore the primary, not a read replica', [{ path: 'path.id', message: 'is a read replica' }]);
  if (b.backup_name !== undefined && b.target_time !== undefined) {
    throw unprocessable('give backup_name or target_time, not both', [
      { path: 'body', message: 'backup_name and target_time are exclusive' },
    ]);
  }
  const backups = await backupsOf(db, row);
  if (backups.backups.length === 0)
    throw unprocessable('this database has no backup to restore', [{ path: 'body', message: 'no backups yet' }]);
  if (b.backup_name !== undefined) {
    if (!backups.backups.some((x) => x.name === b.backup_name)) {
      throw unprocessable(`no backup named "${b.backup_name}"`, [
        { path: 'body.backup_name', message: 'no such backup' },
      ]);
    }
    return { backupName: b.backup_name };
  }
  if (b.target_time !== undefined) {
    const t = new Date(b.target_time);
    if (!ISO_8601.test(b.target_time) || Number.isNaN(t.getTime())) {
      throw unprocessable('target_time must be an ISO 8601 date-time with a time zone, e.g. 2026-11-22T03:00:00Z', [
        { path: 'body.target_time', message: 'not ISO 8601' },
      ]);
    }
    const w = backups.recovery_window!;
    if (t < new Date(w.earliest) || t > new Date()) {
      throw unprocessable(`target_time is outside the recovery window ${w.earliest} .. now`, [
        { path: 'body.target_time', message: 'outside the recovery window' },
      ]);
    }
    return { targetTime: t.toISOString() };
  }
  return { latest: true };
}
