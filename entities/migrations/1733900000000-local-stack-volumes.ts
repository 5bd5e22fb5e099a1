import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The local stacks driver's named volumes (activities/provider/local/stacks.ts): each named
 * volume of a stack is a storage volume of the local data driver (`volume_id`), mounted into
 * the services that name it; the row outlives the services (a redeploy finds the same data)
 * and goes, with the folder, once the stack is deleted.
 */
export class LocalStackVolumes1733900000000 implements MigrationInterface {
  name = 'LocalStackVolumes1733900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE local_stack_volumes (
        volume_id text PRIMARY KEY,
        stack_uuid uuid NOT NULL,
        name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (stack_uuid, name)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE local_stack_volumes`);
  }
}
