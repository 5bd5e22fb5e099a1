import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The per-variable `secret` flag of app and project variables: a secret variable's value is
 * still part of the app's environment but is never returned by the API (only its key, size
 * and digest). Once set, the flag stays (a later write without it keeps it).
 */
export class VariableSecretFlag1732957000000 implements MigrationInterface {
  name = 'VariableSecretFlag1732957000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE app_variables ADD COLUMN secret boolean NOT NULL DEFAULT false`);
    await q.query(`ALTER TABLE project_variables ADD COLUMN secret boolean NOT NULL DEFAULT false`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE project_variables DROP COLUMN IF EXISTS secret`);
    await q.query(`ALTER TABLE app_variables DROP COLUMN IF EXISTS secret`);
  }
}
