import { ApplicationFailure } from '@temporalio/common';
import type { DataSource } from 'typeorm';
import { one } from '../../../entities/sql';
import type { ObjectStoreOptions } from '../../../platform/drivers/storage';

export interface SimulatedOptions {
  dataSource: DataSource;
  /** Probability (0..1) that an operation fails with a transient error. */
  faultRate: number;
  /** How long operations take before they report completion. */
  latencyMs: number;
  random?: () => number;
  /** The S3-compatible object store buckets live on (storage part); absent: none configured. */
  objectStore?: ObjectStoreOptions;
}

/**
 * What every part of the simulated driver shares: its database (the driver keeps its own
 * state in PostgreSQL, in sim_* tables), its latency, and fault injection: at random with
 * BERTH_PROVIDER_FAULT_RATE, or on demand with `injectFault` (tests and operators).
 */
export class SimulatedCore {
  constructor(readonly options: SimulatedOptions) {}

  get db(): DataSource {
    return this.options.dataSource;
  }

  /** Makes the next `count` calls of `operation` fail (retryable or not). */
  static async injectFault(
    ds: DataSource,
    operation: string,
    count = 1,
    options: { retryable?: boolean; message?: string } = {},
  ): Promise<void> {
    await ds.query(
      `INSERT INTO sim_faults (operation, remaining, retryable, message) VALUES ($1, $2, $3, $4)
       ON CONFLICT (operation) DO UPDATE SET remaining = EXCLUDED.remaining, retryable = EXCLUDED.retryable, message = EXCLUDED.message`,
      [operation, count, options.retryable ?? true, options.message ?? `injected fault in ${operation}`],
    );
  }

  static async clearFaults(ds: DataSource): Promise<void> {
    await ds.query(`DELETE FROM sim_faults`);
  }

  /**
   * Call first in every driver operation: fails when a fault is injected for `operation`
   * (a non-retryable one ends the activity at once), or at random with faultRate.
   */
  async maybeFail(operation: string): Promise<void> {
    const injected = await one<{ retryable: boolean; message: string }>(
      this.db,
      `UPDATE sim_faults SET remaining = remaining - 1 WHERE operation = $1 AND remaining > 0 RETURNING retryable, message`,
      [operation],
    );
    if (injected) {
      if (!injected.retryable) throw ApplicationFailure.nonRetryable(injected.message, 'SimulatedFault');
      throw ApplicationFailure.retryable(injected.message, 'SimulatedFault');
    }
    const random = this.options.random ?? Math.random;
    if (this.options.faultRate > 0 && random() < this.options.faultRate) {
      throw ApplicationFailure.retryable(`simulated transient fault in ${operation}`, 'SimulatedFault');
    }
  }

  /** When an operation started now completes (activities poll; workflows sleep between polls). */
  readyAt(now = Date.now()): Date {
    return new Date(now + this.options.latencyMs);
  }
}
