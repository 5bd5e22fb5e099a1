import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The local stacks driver's add-ons (activities/provider/local/stacks.ts): a stack's
 * managed database service has no row in `addons`, so its engine, generated user and
 * database, and its password (sealed) live here, keyed by the stack item.
 */
export class LocalStackAddons1733250000000 implements MigrationInterface {
  name = 'LocalStackAddons1733250000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE local_stack_addons (
        item_uuid uuid PRIMARY KEY,
        engine text NOT NULL CHECK (engine IN ('postgres', 'mysql', 'valkey')),
        username text,
        database text,
        password_sealed text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE local_stack_addons`);
  }
}
