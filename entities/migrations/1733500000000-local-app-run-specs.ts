import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The local apps driver keeps the whole run spec the control plane handed it (environment,
 * web port, quota, health checks, volumes), sealed, where it kept the environment alone.
 * A value sealed before this migration is an environment: the driver reads it as such.
 */
export class LocalAppRunSpecs1733500000000 implements MigrationInterface {
  name = 'LocalAppRunSpecs1733500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE local_apps RENAME COLUMN env_sealed TO run_sealed`);
    await q.query(`ALTER TABLE local_apps RENAME COLUMN pending_env_sealed TO pending_run_sealed`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE local_apps RENAME COLUMN run_sealed TO env_sealed`);
    await q.query(`ALTER TABLE local_apps RENAME COLUMN pending_run_sealed TO pending_env_sealed`);
  }
}
