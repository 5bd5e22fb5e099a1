import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Preview environment configuration per app, the environments, and the simulated driver's previews. */
export class Previews1732800000001 implements MigrationInterface {
  name = 'Previews1732800000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE preview_configs (
        app_uuid uuid PRIMARY KEY REFERENCES apps(uuid) ON DELETE CASCADE,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        enabled boolean NOT NULL DEFAULT false,
        pull_requests boolean NOT NULL DEFAULT true,
        branch_patterns text[] NOT NULL DEFAULT '{}',
        resource_uuid uuid REFERENCES compute_resources(uuid),
        project_uuid uuid REFERENCES projects(uuid) ON DELETE SET NULL,
        use_parent_image boolean NOT NULL DEFAULT false,
        lifetime_hours integer CHECK (lifetime_hours IS NULL OR lifetime_hours > 0),
        webhook_secret_sealed text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE preview_environments (
        id serial PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        parent_app_uuid uuid NOT NULL REFERENCES apps(uuid) ON DELETE CASCADE,
        key text NOT NULL,
        status text NOT NULL DEFAULT 'creating' CHECK (status IN ('creating', 'active', 'updating', 'failed', 'destroying')),
        app_uuid uuid NOT NULL UNIQUE,
        app_name text NOT NULL,
        resource_uuid uuid NOT NULL REFERENCES compute_resources(uuid),
        project_uuid uuid REFERENCES projects(uuid) ON DELETE SET NULL,
        use_parent_image boolean NOT NULL DEFAULT false,
        url text NOT NULL,
        pull_request_number integer,
        pull_request_title text NOT NULL DEFAULT '',
        pull_request_author text NOT NULL DEFAULT '',
        pull_request_state text NOT NULL DEFAULT 'open' CHECK (pull_request_state IN ('open', 'closed')),
        pull_request_url text NOT NULL DEFAULT '',
        pull_request_merged boolean NOT NULL DEFAULT false,
        branch text NOT NULL,
        base_branch text NOT NULL DEFAULT '',
        head_sha text NOT NULL,
        generation integer NOT NULL DEFAULT 1,
        commit_sha text NOT NULL DEFAULT '',
        deployment_error text NOT NULL DEFAULT '',
        last_commit_at timestamptz,
        last_deployed_at timestamptz,
        closed_at timestamptz,
        expires_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (parent_app_uuid, key)
      )`);
    await q.query(
      `CREATE INDEX preview_environments_parent_created ON preview_environments (parent_app_uuid, created_at DESC, id DESC)`,
    );
    // The simulated data-plane driver's preview workloads (activities/provider/simulated/previews.ts).
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

  async down(q: QueryRunner): Promise<void> {
    for (const t of ['sim_previews', 'preview_environments', 'preview_configs'])
      await q.query(`DROP TABLE IF EXISTS ${t}`);
  }
}
