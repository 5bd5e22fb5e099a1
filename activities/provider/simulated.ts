import { ApplicationFailure } from '@temporalio/common';
import type { DataSource } from 'typeorm';
import { one } from '../../entities/sql';
import type { Provider } from './provider';

export interface SimulatedOptions {
  dataSource: DataSource;
  /** Probability (0..1) that an operation fails with a transient error. */
  faultRate: number;
  /** How long operations take before they report completion. */
  latencyMs: number;
  random?: () => number;
}

/**
 * The simulated data-plane driver: keeps its own state in PostgreSQL, completes
 * operations after a configurable latency and fails them at a configurable rate
 * (BERTH_PROVIDER_FAULT_RATE) or on demand (`injectFault`), so retries, compensation and
 * state machines run for real. It runs no workloads.
 */
export class SimulatedProvider implements Provider {
  readonly name = 'simulated';

  constructor(protected readonly options: SimulatedOptions) {}

  /** Makes the next `count` calls of `operation` fail (retryable or not). */
  static async injectFault(ds: DataSource, operation: string, count = 1, options: { retryable?: boolean; message?: string } = {}): Promise<void> {
    await ds.query(
      `INSERT INTO sim_faults (operation, remaining, retryable, message) VALUES ($1, $2, $3, $4)
       ON CONFLICT (operation) DO UPDATE SET remaining = EXCLUDED.remaining, retryable = EXCLUDED.retryable, message = EXCLUDED.message`,
      [operation, count, options.retryable ?? true, options.message ?? `injected fault in ${operation}`]);
  }

  static async clearFaults(ds: DataSource): Promise<void> {
    await ds.query(`DELETE FROM sim_faults`);
  }

  /** Fails when a fault is injected for `operation`, or at random with faultRate. */
  protected async maybeFail(operation: string): Promise<void> {
    const injected = await one<{ retryable: boolean; message: string }>(this.options.dataSource,
      `UPDATE sim_faults SET remaining = remaining - 1 WHERE operation = $1 AND remaining > 0 RETURNING retryable, message`,
      [operation]);
    if (injected) {
      if (!injected.retryable) throw ApplicationFailure.nonRetryable(injected.message, 'SimulatedFault');
      throw ApplicationFailure.retryable(injected.message, 'SimulatedFault');
    }
    const random = this.options.random ?? Math.random;
    if (this.options.faultRate > 0 && random() < this.options.faultRate) {
      throw ApplicationFailure.retryable(`simulated transient fault in ${operation}`, 'SimulatedFault');
    }
  }
}
