import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { SecretBox } from '../domain/secret-box';
import type { Config } from '../platform/config';
import type { Provider } from './provider/provider';

/** What activities are built from (worker/ assembles it; tests pass their own). */
export interface ActivityDeps {
  dataSource: DataSource;
  logger: Logger;
  config: Config;
  secretBox: SecretBox;
  provider: Provider;
  /** For activities that start or signal workflows (event fan-out, schedules). */
  temporal: Client;
}
