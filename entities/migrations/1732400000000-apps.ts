import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Apps (contract: App, App deployment, ports, variables, secret files, TLS certificates).
 * Every column added to `apps` has a default, so areas that insert minimal app rows keep
 * working.
 */
export class Apps1732400000000 implements MigrationInterface {
  name = 'Apps1732400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE apps
        ADD COLUMN deployment_method text NOT NULL DEFAULT 'git_push'
          CHECK (deployment_method IN ('git_push', 'public_git', 'github', 'container_registry', 'parent_image', 'cli_upload')),
        ADD COLUMN deployment_config jsonb NOT NULL DEFAULT '{}',
        ADD COLUMN builder text NOT NULL DEFAULT 'auto' CHECK (builder IN ('auto', 'dockerfile', 'custom')),
        ADD COLUMN manage_dns_records boolean NOT NULL DEFAULT true,
        ADD COLUMN maintenance boolean NOT NULL DEFAULT false,
        ADD COLUMN private_access boolean NOT NULL DEFAULT false,
        ADD COLUMN allow_connections boolean NOT NULL DEFAULT true,
        ADD COLUMN basic_auth_enabled boolean NOT NULL DEFAULT false,
        ADD COLUMN basic_auth_username text,
        ADD COLUMN basic_auth_password_sealed text,
        ADD COLUMN quota jsonb NOT NULL DEFAULT '{"cpu_size": 0.25, "ram_size": 268435456, "disk_size": 1073741824, "replicas": 1}',
        ADD COLUMN internal_port integer NOT NULL DEFAULT 8080 CHECK (internal_port BETWEEN 1 AND 65535),
        ADD COLUMN health_checks jsonb NOT NULL DEFAULT '[]',
        ADD COLUMN scaling_profile jsonb NOT NULL DEFAULT '{"min_replicas": 1, "max_replicas": 1, "target_cpu_percent": null}',
        ADD COLUMN parent_app_uuid uuid REFERENCES apps(uuid) ON DELETE SET NULL,
        ADD COLUMN parent_image_auto_sync boolean NOT NULL DEFAULT false,
        ADD COLUMN created_by_member_uuid uuid REFERENCES members(uuid) ON DELETE SET NULL,
        ADD CONSTRAINT apps_basic_auth CHECK (NOT basic_auth_enabled OR (basic_auth_username IS NOT NULL AND basic_auth_password_sealed IS NOT NULL))`);
    await q.query(`CREATE INDEX apps_workspace_state ON apps (workspace_uuid, state)`);
    await q.query(`CREATE INDEX apps_project ON apps (project_id) WHERE project_id IS NOT NULL`);
    await q.query(`CREATE INDEX apps_resource ON apps (resource_uuid)`);

    await q.query(`
      CREATE TABLE app_deployments (
        uuid uuid PRIMARY KEY,
        app_uuid uuid NOT NULL REFERENCES apps(uuid) ON DELETE CASCADE,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        state text NOT NULL DEFAULT 'pending'
          CHECK (state IN ('pending', 'running', 'completed', 'failed', 'cancelling', 'cancelled')),
        deployment_method text NOT NULL,
        commit_sha text,
        commit_message text,
        branch text,
        image text,
        message text,
        logs_stored_at timestamptz,
        finished_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX app_deployments_app_created ON app_deployments (app_uuid, created_at DESC)`);
    // One deployment in flight per app: a second request is a 409, decided by the database.
    await q.query(
      `CREATE UNIQUE INDEX app_deployments_one_active ON app_deployments (app_uuid) WHERE state IN ('pending', 'running', 'cancelling')`,
    );

    await q.query(`
      CREATE TABLE app_variables (
        app_uuid uuid NOT NULL REFERENCES apps(uuid) ON DELETE CASCADE,
        key text NOT NULL CHECK (key ~ '^[A-Za-z_][A-Za-z0-9_]*$'),
        value_sealed text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (app_uuid, key)
      )`);
    await q.query(`
      CREATE TABLE app_secret_files (
        uuid uuid PRIMARY KEY,
        app_uuid uuid NOT NULL REFERENCES apps(uuid) ON DELETE CASCADE,
        name text NOT NULL,
        content_sealed text NOT NULL,
        size_bytes integer NOT NULL,
        sha256 text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (app_uuid, name)
      )`);

    // The public endpoint (load balancer) of a compute resource, made on its first public port.
    await q.query(`
      CREATE TABLE resource_endpoints (
        resource_uuid uuid PRIMARY KEY REFERENCES compute_resources(uuid) ON DELETE CASCADE,
        endpoint_id uuid NOT NULL UNIQUE,
        seq serial,
        hostname text NOT NULL UNIQUE,
        ipv4_primary inet NOT NULL,
        ipv4_secondary inet NOT NULL,
        ipv6_primary inet NOT NULL,
        ipv6_secondary inet NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE app_ports (
        id serial PRIMARY KEY,
        app_uuid uuid NOT NULL REFERENCES apps(uuid) ON DELETE CASCADE,
        resource_uuid uuid NOT NULL REFERENCES compute_resources(uuid),
        internal_port integer NOT NULL CHECK (internal_port BETWEEN 1 AND 65535),
        protocol text NOT NULL DEFAULT 'tcp' CHECK (protocol IN ('tcp', 'udp')),
        public boolean NOT NULL DEFAULT false,
        external_port integer,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (app_uuid, internal_port, protocol),
        CHECK (external_port IS NULL OR external_port <> internal_port),
        CHECK (public = (external_port IS NOT NULL))
      )`);
    // The pool: an external port is held by one port of the resource's endpoint at a time.
    await q.query(
      `CREATE UNIQUE INDEX app_ports_external ON app_ports (resource_uuid, external_port) WHERE external_port IS NOT NULL`,
    );

    await q.query(`
      CREATE TABLE app_tls_certificates (
        uuid uuid PRIMARY KEY,
        app_uuid uuid NOT NULL REFERENCES apps(uuid) ON DELETE CASCADE,
        subject text NOT NULL,
        issuer text NOT NULL,
        names text[] NOT NULL DEFAULT '{}',
        fingerprint_sha256 text NOT NULL,
        not_before timestamptz NOT NULL,
        not_after timestamptz NOT NULL,
        certificate_pem text NOT NULL,
        private_key_sealed text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (app_uuid, fingerprint_sha256)
      )`);

    // The simulated data-plane driver's state for apps (activities/provider/simulated/apps.ts).
    await q.query(`
      CREATE TABLE sim_apps (
        app_uuid uuid PRIMARY KEY,
        status text NOT NULL DEFAULT 'provisioned',
        replicas integer NOT NULL DEFAULT 0,
        image text,
        volume_uuid uuid,
        ports jsonb NOT NULL DEFAULT '[]',
        ready_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE sim_app_volumes (
        uuid uuid PRIMARY KEY,
        app_uuid uuid NOT NULL,
        source_volume_uuid uuid,
        size_bytes bigint NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE sim_app_builds (
        deployment_uuid uuid PRIMARY KEY,
        app_uuid uuid NOT NULL,
        status text NOT NULL DEFAULT 'building',
        image text,
        reason text,
        ready_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    // Scripted outcomes tests and operators set: a build that fails with a reason, a build
    // held until released, the live status a start ends in.
    await q.query(`
      CREATE TABLE sim_app_scripts (
        app_uuid uuid PRIMARY KEY,
        build_failure text,
        build_hold boolean NOT NULL DEFAULT false,
        start_status text CHECK (start_status IN ('running', 'failed', 'problem'))
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of [
      'sim_app_scripts',
      'sim_app_builds',
      'sim_app_volumes',
      'sim_apps',
      'app_tls_certificates',
      'app_ports',
      'resource_endpoints',
      'app_secret_files',
      'app_variables',
      'app_deployments',
    ]) {
      await q.query(`DROP TABLE IF EXISTS ${t}`);
    }
    await q.query(`DROP INDEX IF EXISTS apps_workspace_state`);
    await q.query(`DROP INDEX IF EXISTS apps_project`);
    await q.query(`DROP INDEX IF EXISTS apps_resource`);
    await q.query(`ALTER TABLE apps DROP CONSTRAINT IF EXISTS apps_basic_auth`);
    for (const c of [
      'deployment_method',
      'deployment_config',
      'builder',
      'manage_dns_records',
      'maintenance',
      'private_access',
      'allow_connections',
      'basic_auth_enabled',
      'basic_auth_username',
      'basic_auth_password_sealed',
      'quota',
      'internal_port',
      'health_checks',
      'scaling_profile',
      'parent_app_uuid',
      'parent_image_auto_sync',
      'created_by_member_uuid',
    ]) {
      await q.query(`ALTER TABLE apps DROP COLUMN IF EXISTS ${c}`);
    }
  }
}
