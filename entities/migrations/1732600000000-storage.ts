import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Buckets, static sites (with their deployments), stacks (deployments and materialized
 * items), and the simulated storage driver's own state (sim_storage_*).
 */
export class Storage1732600000000 implements MigrationInterface {
  name = 'Storage1732600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE buckets (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        project_id uuid REFERENCES projects(uuid) ON DELETE SET NULL,
        resource_uuid uuid NOT NULL REFERENCES compute_resources(uuid),
        name text NOT NULL UNIQUE,
        label text NOT NULL,
        state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'active', 'failed', 'blocked')),
        visibility text NOT NULL CHECK (visibility IN ('public_access', 'private_access')),
        disk_size_gib integer NOT NULL CHECK (disk_size_gib > 0),
        s3_endpoint text NOT NULL,
        s3_access_key text NOT NULL UNIQUE,
        s3_secret_sealed text NOT NULL,
        policy text NOT NULL,
        acl text NOT NULL,
        failure_reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX buckets_workspace_created ON buckets (workspace_uuid, created_at DESC)`);
    await q.query(`
      CREATE TABLE static_sites (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        project_id uuid REFERENCES projects(uuid) ON DELETE SET NULL,
        region_id integer NOT NULL REFERENCES regions(id),
        name text NOT NULL UNIQUE,
        label text NOT NULL,
        state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'assigned', 'deploying', 'running', 'failed')),
        content_bucket text NOT NULL UNIQUE,
        deployment_config jsonb NOT NULL DEFAULT '{}',
        credential_id uuid REFERENCES container_registry_credentials(uuid) ON DELETE SET NULL,
        failure_reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX static_sites_workspace_created ON static_sites (workspace_uuid, created_at DESC)`);
    await q.query(`
      CREATE TABLE static_site_deployments (
        uuid uuid PRIMARY KEY,
        site_uuid uuid NOT NULL REFERENCES static_sites(uuid) ON DELETE CASCADE,
        state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'completed', 'failed')),
        commit_sha text,
        file_count integer,
        message text,
        created_at timestamptz NOT NULL DEFAULT now(),
        completed_at timestamptz
      )`);
    await q.query(`CREATE INDEX static_site_deployments_site ON static_site_deployments (site_uuid, created_at DESC)`);
    await q.query(`
      CREATE TABLE stacks (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        project_id uuid REFERENCES projects(uuid) ON DELETE SET NULL,
        resource_uuid uuid NOT NULL REFERENCES compute_resources(uuid),
        name text NOT NULL,
        label text NOT NULL,
        compose_path text NOT NULL,
        repository text NOT NULL,
        branch text NOT NULL,
        auto_deploy_enabled boolean NOT NULL DEFAULT false,
        credential_id uuid REFERENCES container_registry_credentials(uuid) ON DELETE SET NULL,
        manifest jsonb NOT NULL,
        variables_sealed text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (workspace_uuid, name)
      )`);
    await q.query(`CREATE INDEX stacks_workspace_created ON stacks (workspace_uuid, created_at DESC)`);
    await q.query(`
      CREATE TABLE stack_deployments (
        uuid uuid PRIMARY KEY,
        stack_uuid uuid NOT NULL REFERENCES stacks(uuid) ON DELETE CASCADE,
        state text NOT NULL DEFAULT 'pending'
          CHECK (state IN ('pending', 'validating', 'publishing', 'building', 'deploying', 'completed', 'failed')),
        subevent text,
        commit_sha text,
        validation_errors jsonb NOT NULL DEFAULT '{}',
        published_at timestamptz,
        completed_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX stack_deployments_stack ON stack_deployments (stack_uuid, created_at DESC)`);
    await q.query(`
      CREATE TABLE stack_items (
        uuid uuid PRIMARY KEY,
        stack_uuid uuid NOT NULL REFERENCES stacks(uuid) ON DELETE CASCADE,
        compose_service_name text NOT NULL,
        compose_service_type text NOT NULL,
        item_type text NOT NULL CHECK (item_type IN ('app', 'addon')),
        item_name text NOT NULL,
        status text NOT NULL DEFAULT 'pending',
        cpu_size double precision NOT NULL DEFAULT 0,
        ram_size bigint NOT NULL DEFAULT 0,
        disk_size bigint NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (stack_uuid, compose_service_name)
      )`);
    // The simulated storage driver's state: which access key it granted on which bucket,
    // static-site routes, and the stack services it runs.
    await q.query(`
      CREATE TABLE sim_storage_keys (
        access_key text PRIMARY KEY,
        bucket_name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE sim_storage_routes (
        host text PRIMARY KEY,
        bucket_name text NOT NULL,
        prefix text NOT NULL DEFAULT '',
        active boolean NOT NULL DEFAULT false,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE sim_stack_services (
        item_uuid uuid PRIMARY KEY,
        image text,
        status text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of [
      'sim_stack_services',
      'sim_storage_routes',
      'sim_storage_keys',
      'stack_items',
      'stack_deployments',
      'stacks',
      'static_site_deployments',
      'static_sites',
      'buckets',
    ]) {
      await q.query(`DROP TABLE IF EXISTS ${t}`);
    }
  }
}
