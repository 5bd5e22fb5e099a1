import { randomBytes, randomInt } from 'node:crypto';
import { createServer } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import type { DataSource } from 'typeorm';
import type { SecretBox } from '../../../../domain/secret-box';
import { one, rows } from '../../../../entities/sql';
import type { ClusterSpec, DataEngine } from '../../../../platform/drivers/data';

/**
 * Ports of the local driver's database servers: below the kernel's ephemeral range
 * (32768+) and the apps' external port pool (30000-32767). The unique index on
 * local_data_clusters.port allocates; a port another program holds is skipped.
 */
export const DATA_PORT_POOL = { low: 25000, high: 29999 } as const;

/** A row of local_data_clusters: what Berth wants a server to be. */
export interface ClusterRow {
  id: string;
  engine: DataEngine;
  port: number;
  running: boolean;
  public_access: boolean;
  backups: boolean;
  replica_of: string | null;
  username: string | null;
  database: string | null;
  cpu_size: number;
  ram_size: string;
  secrets_sealed: string | null;
}

/** Internal passwords of a cluster (its superuser and its replication user): sealed at rest, never logged. */
export interface ClusterSecrets {
  admin: string;
  replication: string;
}

const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen({ port, host: '0.0.0.0', exclusive: true }, () => s.close(() => resolve(true)));
  });

export class ClusterStore {
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(
    private readonly ds: DataSource,
    private readonly secretBox: SecretBox,
  ) {}

  async find(id: string): Promise<ClusterRow | undefined> {
    return one<ClusterRow>(this.ds, `SELECT * FROM local_data_clusters WHERE id = $1`, [id]);
  }

  async get(id: string): Promise<ClusterRow> {
    const row = await this.find(id);
    if (!row) throw ApplicationFailure.nonRetryable(`no such cluster ${id}`, 'ClusterNotFound');
    return row;
  }

  async replicasOf(id: string): Promise<ClusterRow[]> {
    return rows<ClusterRow>(this.ds, `SELECT * FROM local_data_clusters WHERE replica_of = $1`, [id]);
  }

  /** Every cluster that should be running (to start them again when Berth starts). */
  async wanted(): Promise<ClusterRow[]> {
    return rows<ClusterRow>(
      this.ds,
      `SELECT * FROM local_data_clusters WHERE running ORDER BY replica_of NULLS FIRST, created_at`,
    );
  }

  secrets(row: ClusterRow): ClusterSecrets {
    return JSON.parse(this.secretBox.open(row.secrets_sealed!)) as ClusterSecrets;
  }

  /**
   * The cluster's row, inserted once (idempotent by id) with a port of the pool and new
   * internal passwords (or `secretsFrom`'s: a copy of another cluster's data keeps them).
   */
  async ensure(spec: ClusterSpec, extra: { replicaOf?: string; secretsFrom?: ClusterRow } = {}): Promise<ClusterRow> {
    const existing = await this.find(spec.id);
    if (existing) return existing;
    const secrets =
      extra.secretsFrom?.secrets_sealed ??
      this.secretBox.seal(
        JSON.stringify({
          admin: randomBytes(24).toString('base64url'),
          replication: randomBytes(24).toString('base64url'),
        }),
      );
    const size = DATA_PORT_POOL.high - DATA_PORT_POOL.low + 1;
    for (let attempt = 0; attempt < 30; attempt++) {
      const start = randomInt(0, size);
      const candidate = await one<{ p: number }>(
        this.ds,
        `SELECT p FROM generate_series($1::int, $2::int) p WHERE NOT EXISTS (SELECT 1 FROM local_data_clusters WHERE port = p)
          ORDER BY (p - $1 - $3 + $4) % $4 LIMIT 1`,
        [DATA_PORT_POOL.low, DATA_PORT_POOL.high, start, size],
      );
      if (!candidate) throw ApplicationFailure.nonRetryable('the data port pool is exhausted', 'PortPoolExhausted');
      if (!(await portFree(candidate.p))) continue;
      try {
        const [row] = await rows<ClusterRow>(
          this.ds,
          `INSERT INTO local_data_clusters (id, engine, port, running, public_access, backups, replica_of, username, database, cpu_size, ram_size, secrets_sealed)
           VALUES ($1, $2, $3, true, $4, false, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING RETURNING *`,
          [
            spec.id,
            spec.engine,
            candidate.p,
            spec.publicAccess,
            extra.replicaOf ?? null,
            spec.username ?? null,
            spec.database ?? null,
            spec.cpuSize,
            Math.round(spec.ramSize),
            secrets,
          ],
        );
        return row ?? (await this.get(spec.id));
      } catch (err) {
        if ((err as { driverError?: { code?: string }; code?: string }).driverError?.code !== '23505') throw err;
      }
    }
    throw ApplicationFailure.retryable('the data port pool is busy; try again', 'PortPoolBusy');
  }

  async set(id: string, fields: Partial<Pick<ClusterRow, 'running' | 'public_access' | 'backups'>>): Promise<void> {
    const keys = Object.keys(fields) as Array<keyof typeof fields>;
    if (keys.length === 0) return;
    await this.ds.query(
      `UPDATE local_data_clusters SET ${keys.map((k, i) => `${k} = $${i + 2}`).join(', ')} WHERE id = $1`,
      [id, ...keys.map((k) => fields[k])],
    );
  }

  async remove(id: string): Promise<void> {
    await this.ds.query(`DELETE FROM local_data_clusters WHERE id = $1`, [id]);
  }

  /** Runs `fn` alone for this cluster (operations on one cluster never interleave in this process). */
  async exclusive<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(id) ?? Promise.resolve();
    const next = prev.catch(() => {}).then(fn);
    this.locks.set(id, next);
    try {
      return await next;
    } finally {
      if (this.locks.get(id) === next) this.locks.delete(id);
    }
  }

  busy(id: string): boolean {
    return this.locks.has(id);
  }
}
