import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The simulated driver's `previews` part is gone: a preview's app is a clone of its parent
 * deployed by the apps driver (sim_apps), so its own table goes. An environment made before
 * gets its workload from the apps driver at its next commit.
 */
export class DropSimPreviews1732970000000 implements MigrationInterface {
  name = 'DropSimPreviews1732970000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS sim_previews`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE sim_previews (
        app_uuid uuid PRIMARY KEY,
        parent_app_uuid uuid NOT NULL,
        resource_uuid uuid NOT NULL,
        image text NOT NULL DEFAULT '',
        commit_sha text NOT NULL DEFAULT '',
        deploys integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
  }
}
