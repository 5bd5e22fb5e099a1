import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Variables and secret files of a project (the base of its apps' environment, overlaid by
 * each app's own), and the app's "needs a redeploy" mark: set when a variable of the app or
 * of its project changes, cleared when a deployment that began after the change completes.
 */
export class ProjectVariables1732950000000 implements MigrationInterface {
  name = 'ProjectVariables1732950000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE project_variables (
        project_uuid uuid NOT NULL REFERENCES projects(uuid) ON DELETE CASCADE,
        key text NOT NULL CHECK (key ~ '^[A-Za-z_][A-Za-z0-9_]*$'),
        value_sealed text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (project_uuid, key)
      )`);
    await q.query(`
      CREATE TABLE project_secret_files (
        uuid uuid PRIMARY KEY,
        project_uuid uuid NOT NULL REFERENCES projects(uuid) ON DELETE CASCADE,
        name text NOT NULL,
        content_sealed text NOT NULL,
        size_bytes integer NOT NULL,
        sha256 text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (project_uuid, name)
      )`);
    await q.query(`ALTER TABLE apps ADD COLUMN needs_redeploy_since timestamptz`);
    // the simulated data plane records what environment a rollout got: names and a digest, no values
    await q.query(`ALTER TABLE sim_apps ADD COLUMN env_keys text[] NOT NULL DEFAULT '{}', ADD COLUMN env_digest text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sim_apps DROP COLUMN IF EXISTS env_keys, DROP COLUMN IF EXISTS env_digest`);
    await q.query(`ALTER TABLE apps DROP COLUMN IF EXISTS needs_redeploy_since`);
    await q.query(`DROP TABLE IF EXISTS project_secret_files`);
    await q.query(`DROP TABLE IF EXISTS project_variables`);
  }
}
