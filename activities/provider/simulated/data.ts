import { createHash, randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { one, rows } from '../../../entities/sql';
import type { BackupInfo, ClusterSpec, ClusterStatus, DataDriver, RestoreSource } from '../../../platform/drivers/data';
import type { SimulatedCore } from './core';
import { UNHEALTHY_STATES } from '../../../domain/addon-states';

/** Statuses a test (or operator) can force on a simulated cluster; `live` means healthy/bound. */
export const SIMULATED_STATUSES = ['live', 'unknown', ...UNHEALTHY_STATES] as const;

interface ClusterRow {
  id: string;
  engine: string;
  status: (typeof SIMULATED_STATUSES)[number];
  ready_at: Date;
  deleted_at: Date | null;
  running: boolean;
}

const hash = (password: string | null) => (password ? createHash('sha256').update(password).digest('hex') : null);

/**
 * The simulated data plane (SIMULATED: no database server runs). Each cluster is a row of
 * sim_data_clusters; its data is an append-only log of key/value writes in sim_data_rows
 * (the current value of a key is its last write), so point-in-time recovery replays the
 * log up to a time; a backup is a snapshot of the current values. Passwords are kept only
 * as a hash. Extra methods (writeRow, readRows, setStatus) let tests act as a client.
 */
export class SimulatedData implements DataDriver {
  constructor(private readonly core: SimulatedCore) {}

  private get db() {
    return this.core.db;
  }

  private async cluster(id: string): Promise<ClusterRow> {
    const row = await one<ClusterRow>(
      this.db,
      `SELECT id, engine, status, ready_at, deleted_at, running FROM sim_data_clusters WHERE id = $1`,
      [id],
    );
    if (!row || row.deleted_at) throw ApplicationFailure.nonRetryable(`no such cluster ${id}`, 'ClusterNotFound');
    return row;
  }

  private async insert(spec: ClusterSpec, replicaOf: string | null): Promise<void> {
    await this.db.query(
      `INSERT INTO sim_data_clusters (id, engine, status, ready_at, public_access, backups, replica_of, cpu_size, ram_size, password_hash)
       VALUES ($1, $2, 'live', $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`,
      [
        spec.id,
        spec.engine,
        this.core.readyAt(),
        spec.publicAccess,
        spec.backups,
        replicaOf,
        spec.cpuSize,
        spec.ramSize,
        hash(spec.password),
      ],
    );
  }

  /** The simulated data plane pretends to run every engine. */
  supports(): string | null {
    return null;
  }

  async provision(spec: ClusterSpec): Promise<void> {
    await this.core.maybeFail('data.provision');
    await this.insert(spec, null);
    if (spec.backups) await this.setBackups(spec.id, true);
  }

  async createReplica(spec: ClusterSpec & { primaryId: string }): Promise<void> {
    await this.core.maybeFail('data.createReplica');
    const primary = await this.cluster(spec.primaryId);
    if (primary.engine !== 'postgres')
      throw ApplicationFailure.nonRetryable('replicas exist for postgres only', 'NotSupported');
    await this.insert({ ...spec, backups: false }, spec.primaryId);
  }

  async status(id: string): Promise<ClusterStatus> {
    await this.core.maybeFail('data.status');
    const c = await this.cluster(id);
    if (!c.running) return { status: 'stopped', ready: true };
    if (new Date(c.ready_at).getTime() > Date.now()) return { status: 'creating', ready: false };
    if (c.status === 'live') return { status: c.engine === 'storage' ? 'bound' : 'healthy', ready: true };
    if (c.status === 'unknown') return { status: 'running', ready: true };
    return { status: c.status, ready: true };
  }

  async setPublicAccess(id: string, on: boolean): Promise<void> {
    await this.core.maybeFail('data.setPublicAccess');
    await this.cluster(id);
    await this.db.query(`UPDATE sim_data_clusters SET public_access = $2 WHERE id = $1`, [id, on]);
  }

  async setRunning(id: string, running: boolean): Promise<void> {
    await this.core.maybeFail('data.setRunning');
    await this.cluster(id);
    await this.db.query(
      `UPDATE sim_data_clusters SET running = $2, ready_at = CASE WHEN $2 AND NOT running THEN $3 ELSE ready_at END WHERE id = $1`,
      [id, running, this.core.readyAt()],
    );
  }

  async setBackups(id: string, on: boolean): Promise<void> {
    await this.core.maybeFail('data.setBackups');
    await this.cluster(id);
    const [changed] = await rows<{ id: string }>(
      this.db,
      `UPDATE sim_data_clusters SET backups = $2 WHERE id = $1 AND backups <> $2 RETURNING id`,
      [id, on],
    );
    const [{ n }] = await this.db.query(`SELECT count(*)::int AS n FROM sim_data_backups WHERE cluster_id = $1`, [id]);
    if (on && (changed || n === 0)) await this.snapshot(id);
  }

  async backupNow(id: string): Promise<BackupInfo> {
    await this.core.maybeFail('data.backupNow');
    await this.cluster(id);
    return this.snapshot(id);
  }

  private async snapshot(id: string): Promise<BackupInfo> {
    const data = await this.readRows(id);
    const name = `backup-${new Date().toISOString().replace(/[-:.]/g, '').toLowerCase()}-${randomBytes(3).toString('hex')}`;
    const size = Buffer.byteLength(JSON.stringify(data)) + 8192;
    const row = await one<BackupInfo>(
      this.db,
      `INSERT INTO sim_data_backups (cluster_id, name, taken_at, size, snapshot) VALUES ($1, $2, clock_timestamp(), $3, $4)
       RETURNING name, taken_at, size::int AS size`,
      [id, name, size, JSON.stringify(data)],
    );
    return row!;
  }

  async listBackups(id: string): Promise<BackupInfo[]> {
    await this.core.maybeFail('data.listBackups');
    return rows<BackupInfo>(
      this.db,
      `SELECT name, taken_at, size::int AS size FROM sim_data_backups WHERE cluster_id = $1 ORDER BY taken_at DESC`,
      [id],
    );
  }

  async recoveryWindow(id: string) {
    const row = await one<{ earliest: Date | null }>(
      this.db,
      `SELECT min(taken_at) AS earliest FROM sim_data_backups WHERE cluster_id = $1`,
      [id],
    );
    return row?.earliest ? { earliest: new Date(row.earliest), latest: new Date() } : null;
  }

  async restore(input: {
    sourceId: string;
    targetId: string;
    from: RestoreSource;
    targetSpec?: ClusterSpec;
  }): Promise<{ restored: string }> {
    await this.core.maybeFail('data.restore');
    await this.cluster(input.sourceId);
    let data: Record<string, string>;
    let restored: string;
    if ('targetTime' in input.from) {
      const window = await this.recoveryWindow(input.sourceId);
      const t = new Date(input.from.targetTime);
      if (!window || t < window.earliest)
        throw ApplicationFailure.nonRetryable('target time outside the recovery window', 'OutsideWindow');
      data = await this.readRows(input.sourceId, t);
      restored = t.toISOString();
    } else {
      const backup =
        'backupName' in input.from
          ? await one<{ name: string; snapshot: Record<string, string> }>(
              this.db,
              `SELECT name, snapshot FROM sim_data_backups WHERE cluster_id = $1 AND name = $2`,
              [input.sourceId, input.from.backupName],
            )
          : await one<{ name: string; snapshot: Record<string, string> }>(
              this.db,
              `SELECT name, snapshot FROM sim_data_backups WHERE cluster_id = $1 ORDER BY taken_at DESC LIMIT 1`,
              [input.sourceId],
            );
      if (!backup) throw ApplicationFailure.nonRetryable('no such backup', 'BackupNotFound');
      data = backup.snapshot;
      restored = backup.name;
    }
    if (input.targetId !== input.sourceId) {
      if (!input.targetSpec) throw ApplicationFailure.nonRetryable('a new cluster needs its spec', 'BadRequest');
      const existing = await one(this.db, `SELECT 1 FROM sim_data_clusters WHERE id = $1`, [input.targetId]);
      if (existing) return { restored }; // already restored (a retry)
      await this.insert(input.targetSpec, null);
    } else {
      await this.db.query(`DELETE FROM sim_data_rows WHERE cluster_id = $1`, [input.targetId]);
    }
    for (const [key, value] of Object.entries(data)) await this.writeRow(input.targetId, key, value);
    return { restored };
  }

  async reset(id: string): Promise<void> {
    await this.core.maybeFail('data.reset');
    await this.cluster(id);
    await this.db.query(`DELETE FROM sim_data_rows WHERE cluster_id = $1`, [id]);
    await this.db.query(`DELETE FROM sim_data_backups WHERE cluster_id = $1`, [id]);
    await this.db.query(`DELETE FROM sim_data_dirs WHERE cluster_id = $1`, [id]);
  }

  async delete(id: string): Promise<void> {
    await this.core.maybeFail('data.delete');
    await this.db.query(`DELETE FROM sim_data_clusters WHERE id = $1 OR replica_of = $1`, [id]);
  }

  async ensureSubPath(id: string, path: string): Promise<void> {
    await this.core.maybeFail('data.ensureSubPath');
    const c = await this.cluster(id);
    if (c.engine !== 'storage')
      throw ApplicationFailure.nonRetryable('sub paths exist on storage volumes only', 'NotSupported');
    await this.db.query(`INSERT INTO sim_data_dirs (cluster_id, path) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [
      id,
      path,
    ]);
  }

  async copyVolume(sourceId: string, targetId: string): Promise<void> {
    await this.core.maybeFail('data.copyVolume');
    await this.cluster(targetId);
    await this.db.query(
      `INSERT INTO sim_data_dirs (cluster_id, path) SELECT $2, path FROM sim_data_dirs WHERE cluster_id = $1 ON CONFLICT DO NOTHING`,
      [sourceId, targetId],
    );
  }

  async runJob(input: { appUuid: string; command: string }) {
    await this.core.maybeFail('data.runJob');
    const started = new Date().toISOString();
    const exitCode = /\bexit\s+([1-9]\d*)\b/.exec(input.command)?.[1];
    return {
      exitCode: exitCode ? Number(exitCode) : 0,
      log: `${started} [simulated] app ${input.appUuid}: $ ${input.command}\n${started} [simulated] exited with ${exitCode ?? 0}\n`,
    };
  }

  // --- simulated-only helpers (tests act as a database client) ---

  async writeRow(id: string, key: string, value: string): Promise<void> {
    await this.db.query(`INSERT INTO sim_data_rows (cluster_id, key, value) VALUES ($1, $2, $3)`, [id, key, value]);
  }

  /** Current values (or as of `at`). */
  async readRows(id: string, at?: Date): Promise<Record<string, string>> {
    const found = await rows<{ key: string; value: string }>(
      this.db,
      `SELECT DISTINCT ON (key) key, value FROM sim_data_rows WHERE cluster_id = $1 AND ($2::timestamptz IS NULL OR written_at <= $2)
        ORDER BY key, seq DESC`,
      [id, at ?? null],
    );
    return Object.fromEntries(found.map((r) => [r.key, r.value]));
  }

  async setStatus(id: string, status: (typeof SIMULATED_STATUSES)[number]): Promise<void> {
    await this.db.query(`UPDATE sim_data_clusters SET status = $2 WHERE id = $1`, [id, status]);
  }

  async clusterInfo(id: string) {
    return one<{
      id: string;
      engine: string;
      running: boolean;
      public_access: boolean;
      backups: boolean;
      replica_of: string | null;
      cpu_size: number;
      ram_size: string;
      password_hash: string | null;
    }>(
      this.db,
      `SELECT id, engine, running, public_access, backups, replica_of, cpu_size, ram_size, password_hash FROM sim_data_clusters WHERE id = $1`,
      [id],
    );
  }

  async dirs(id: string): Promise<string[]> {
    return (
      await rows<{ path: string }>(this.db, `SELECT path FROM sim_data_dirs WHERE cluster_id = $1 ORDER BY path`, [id])
    ).map((r) => r.path);
  }
}
