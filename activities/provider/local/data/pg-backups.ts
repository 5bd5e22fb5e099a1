import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { BackupInfo, RestoreSource } from '../../../../platform/drivers/data';
import { giveTo, clusterUid, run } from './commands';
import type { Isolation } from '../sandbox/isolation';
import { slotOf, type PgEngine, type PgRecovery } from './postgres';
import type { ClusterRow } from './store';

/** What a base backup folder (`archive/base/<name>/`) holds beside `base.tar`, `backup_label` and `wal/`. */
interface BackupMeta {
  name: string;
  taken_at: string;
  size: number;
  start_wal: string;
  stop_wal: string;
}

/** Files of the data directory a copy leaves out (PostgreSQL's own list for base backups). */
const EXCLUDE = [
  'pg_wal/*',
  'postmaster.pid',
  'postmaster.opts',
  'pg_replslot/*',
  'pg_stat_tmp/*',
  'pg_dynshmem/*',
  'pg_notify/*',
  'pg_serial/*',
  'pg_snapshots/*',
  'pg_subtrans/*',
  'backup_label',
  'tablespace_map',
  'standby.signal',
  'recovery.signal',
];

/** The segment names from `first` to `last` (same timeline) for segments of `segSize` bytes. */
export function walRange(first: string, last: string, segSize: number): string[] {
  const perId = 0x100000000 / segSize;
  const parse = (n: string) => parseInt(n.slice(8, 16), 16) * perId + parseInt(n.slice(16, 24), 16);
  const tli = first.slice(0, 8);
  const out: string[] = [];
  for (let s = parse(first); s <= parse(last); s++) {
    out.push(
      `${tli}${Math.floor(s / perId)
        .toString(16)
        .toUpperCase()
        .padStart(8, '0')}${(s % perId).toString(16).toUpperCase().padStart(8, '0')}`,
    );
  }
  return out;
}

const backupName = () =>
  `backup-${new Date().toISOString().replace(/[-:.]/g, '').toLowerCase()}-${randomBytes(3).toString('hex')}`;

/**
 * Base backups, point-in-time recovery and streaming replicas of the local PostgreSQL
 * clusters, with the low-level backup functions (the embedded binaries have no
 * pg_basebackup): pg_backup_start, a tar of the data directory, pg_backup_stop (which waits
 * for the WAL to be archived when archiving is on), its backup_label, and the WAL segments
 * the copy needs kept beside it, so each backup restores on its own.
 */
export class PgBackups {
  constructor(
    private readonly pg: PgEngine,
    private readonly iso: Isolation,
  ) {}

  /** Copies the running cluster `row` into `dest` (base.tar, backup_label, wal/): a base backup or a standby's seed. */
  async copy(row: ClusterRow, dest: string, label: string, slot?: string): Promise<BackupMeta> {
    const p = this.pg.paths(row.id);
    await mkdir(path.join(dest, 'wal'), { recursive: true });
    return this.pg.admin(row, async (c) => {
      if (slot && !(await c.query(`SELECT 1 FROM pg_replication_slots WHERE slot_name = $1`, [slot])).rowCount) {
        await c.query(`SELECT pg_create_physical_replication_slot($1, true)`, [slot]);
      }
      const segSize = Number(
        (await c.query(`SELECT setting FROM pg_settings WHERE name = 'wal_segment_size'`)).rows[0].setting,
      );
      const archiving = (await c.query(`SHOW archive_mode`)).rows[0].archive_mode === 'on';
      const start = (await c.query(`SELECT pg_walfile_name(lsn) AS f FROM pg_backup_start($1, true) lsn`, [label]))
        .rows[0].f as string;
      let stop: { f: string; labelfile: string };
      try {
        await run(
          ['tar', '-cf', path.join(dest, 'base.tar'), '-C', p.pgdata, ...EXCLUDE.map((e) => `--exclude=./${e}`), '.'],
          { okCodes: [0, 1] },
        );
      } finally {
        stop = (await c.query(`SELECT pg_walfile_name(lsn) AS f, labelfile FROM pg_backup_stop($1)`, [archiving]))
          .rows[0];
      }
      await writeFile(path.join(dest, 'backup_label'), stop.labelfile);
      let size = (await stat(path.join(dest, 'base.tar'))).size;
      for (const seg of walRange(start, stop.f, segSize)) {
        const from = [path.join(p.pgdata, 'pg_wal', seg), path.join(p.wal, seg)].find((f) => existsSync(f));
        if (!from) throw new Error(`WAL segment ${seg} of the backup is gone`);
        await copyFile(from, path.join(dest, 'wal', seg));
        size += segSize;
      }
      const meta: BackupMeta = {
        name: label,
        taken_at: new Date().toISOString(),
        size,
        start_wal: start,
        stop_wal: stop.f,
      };
      await writeFile(path.join(dest, 'info.json'), JSON.stringify(meta));
      await giveTo(this.iso, dest, clusterUid(row.id));
      return meta;
    });
  }

  /** Takes a base backup into the archive. */
  async backup(row: ClusterRow): Promise<BackupInfo> {
    const name = backupName();
    const base = this.pg.paths(row.id).base;
    const tmp = path.join(base, `.${name}`);
    const meta = await this.copy(row, tmp, name);
    await rename(tmp, path.join(base, name));
    return { name, taken_at: new Date(meta.taken_at), size: meta.size };
  }

  async list(id: string): Promise<BackupMeta[]> {
    const base = this.pg.paths(id).base;
    const names = existsSync(base) ? (await readdir(base)).filter((n) => !n.startsWith('.')) : [];
    const metas: BackupMeta[] = [];
    for (const n of names) {
      try {
        metas.push(JSON.parse(await readFile(path.join(base, n, 'info.json'), 'utf8')) as BackupMeta);
      } catch {
        // a backup folder without its info is incomplete: not listed
      }
    }
    return metas.sort((a, b) => b.taken_at.localeCompare(a.taken_at));
  }

  /** Asks the server to close its WAL segment and waits until the archive holds it (what was committed until now is restorable). */
  async flushArchive(row: ClusterRow): Promise<void> {
    if (!row.backups || !this.pg.alive(row)) return;
    await this.pg.admin(row, async (c) => {
      // A committed transaction first: the switch always closes a segment (it does nothing on
      // an idle server), and a recovery to any time until now finds a commit past its target
      // (PostgreSQL refuses a recovery that ends before its target time).
      await c.query(`SELECT pg_logical_emit_message(true, 'berth', 'archive')`);
      const { f } = (await c.query(`SELECT pg_walfile_name(pg_switch_wal()) AS f`)).rows[0];
      for (let i = 0; i < 300; i++) {
        if (existsSync(path.join(this.pg.paths(row.id).wal, f))) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`WAL segment ${f} was not archived within 30 s`);
    });
  }

  /** Empties the archive (WAL and base backups). */
  async dropArchive(row: ClusterRow): Promise<void> {
    const p = this.pg.paths(row.id);
    for (const dir of [p.wal, p.base]) {
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir, { recursive: true });
      await giveTo(this.iso, dir, clusterUid(row.id));
    }
  }

  /** The base backup a restore starts from, and the recovery settings that reach its target. */
  async plan(
    source: ClusterRow,
    from: RestoreSource,
  ): Promise<{ backup: BackupMeta; recovery: Pick<PgRecovery, 'target' | 'timeline'>; restored: string }> {
    const list = await this.list(source.id);
    if ('backupName' in from) {
      const backup = list.find((b) => b.name === from.backupName);
      if (!backup) throw ApplicationFailure.nonRetryable(`no backup named ${from.backupName}`, 'BackupNotFound');
      return { backup, recovery: { target: { immediate: true }, timeline: 'current' }, restored: backup.name };
    }
    if ('targetTime' in from) {
      const t = new Date(from.targetTime);
      const backup = list.find((b) => new Date(b.taken_at) < t);
      if (!backup) throw ApplicationFailure.nonRetryable('target time outside the recovery window', 'OutsideWindow');
      return { backup, recovery: { target: { time: t.toISOString() }, timeline: 'latest' }, restored: t.toISOString() };
    }
    const backup = list[0];
    if (!backup) throw ApplicationFailure.nonRetryable('no backup to restore', 'BackupNotFound');
    return { backup, recovery: { timeline: 'latest' }, restored: backup.name };
  }

  /**
   * Replaces `target`'s data directory with the base backup and starts it in archive
   * recovery (recovery.signal) taking WAL from `walDirs`; answers once it is promoted.
   */
  async recover(target: ClusterRow, backupDir: string, walDirs: string[], recovery: PgRecovery): Promise<void> {
    const p = this.pg.paths(target.id);
    await this.pg.stop(target);
    const old = `${p.pgdata}.old`;
    await rm(old, { recursive: true, force: true });
    if (existsSync(p.pgdata)) await rename(p.pgdata, old);
    await mkdir(p.pgdata, { recursive: true, mode: 0o700 });
    await run(['tar', '-xf', path.join(backupDir, 'base.tar'), '-C', p.pgdata]);
    await mkdir(path.join(p.pgdata, 'pg_wal', 'archive_status'), { recursive: true });
    await copyFile(path.join(backupDir, 'backup_label'), path.join(p.pgdata, 'backup_label'));
    await writeFile(path.join(p.pgdata, 'recovery.signal'), '');
    await this.pg.writeHba(target);
    await this.pg.configure(target, { ...recovery, restoreFrom: [path.join(backupDir, 'wal'), ...walDirs] });
    await giveTo(this.iso, p.pgdata, clusterUid(target.id));
    await this.pg.start(target);
    await this.pg.admin(target, async (c) => {
      for (let i = 0; i < 600; i++) {
        if (!(await c.query(`SELECT pg_is_in_recovery() AS r`)).rows[0].r) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`cluster ${target.id} is still recovering after 60 s`);
    });
    await this.pg.configure(target);
    await rm(old, { recursive: true, force: true });
  }

  /** Seeds a hot standby of `primary` into `replica`'s data directory (a copy, standby.signal, primary_conninfo, a slot). */
  async seedStandby(primary: ClusterRow, replica: ClusterRow): Promise<void> {
    const p = this.pg.paths(replica.id);
    const seed = path.join(p.dir, 'seed');
    await rm(seed, { recursive: true, force: true });
    const slot = slotOf(replica.id);
    await this.copy(primary, seed, `standby ${replica.id}`, slot);
    await rm(p.pgdata, { recursive: true, force: true });
    await mkdir(p.pgdata, { recursive: true, mode: 0o700 });
    await run(['tar', '-xf', path.join(seed, 'base.tar'), '-C', p.pgdata]);
    await mkdir(path.join(p.pgdata, 'pg_wal', 'archive_status'), { recursive: true });
    await copyFile(path.join(seed, 'backup_label'), path.join(p.pgdata, 'backup_label'));
    for (const f of await readdir(path.join(seed, 'wal')))
      await copyFile(path.join(seed, 'wal', f), path.join(p.pgdata, 'pg_wal', f));
    await writeFile(path.join(p.pgdata, 'standby.signal'), '');
    await this.pg.writeHba(replica);
    await this.pg.configure(replica);
    await rm(seed, { recursive: true, force: true });
    await giveTo(this.iso, p.dir, clusterUid(replica.id));
  }
}
