import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Data services: add-ons attached to apps, standalone services and cron jobs share one
 * table (a cron job is add-on-shaped, type `cronjob`); cron job runs with their logs;
 * storage mounts of services into apps; and the simulated data plane's sim_data_* tables.
 */
export class DataServices1732700000000 implements MigrationInterface {
  name = 'DataServices1732700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE addons (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('addon', 'service')),
        app_uuid uuid REFERENCES apps(uuid) ON DELETE CASCADE,
        project_id uuid REFERENCES projects(uuid) ON DELETE SET NULL,
        resource_uuid uuid NOT NULL REFERENCES compute_resources(uuid),
        type text NOT NULL CHECK (type IN ('postgres', 'mysql', 'valkey', 'storage', 'cronjob')),
        name text NOT NULL UNIQUE,
        label text NOT NULL,
        state text NOT NULL DEFAULT 'pending',
        quota jsonb NOT NULL DEFAULT '{}',
        settings jsonb NOT NULL DEFAULT '{}',
        public_access boolean NOT NULL DEFAULT false,
        backup_enabled boolean NOT NULL DEFAULT false,
        backup_active boolean NOT NULL DEFAULT false,
        settings_generation integer NOT NULL DEFAULT 0,
        database_name text,
        username text,
        password_sealed text,
        replica_of uuid REFERENCES addons(uuid) ON DELETE CASCADE,
        restored_from uuid REFERENCES addons(uuid) ON DELETE SET NULL,
        cluster_id text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((kind = 'addon') = (app_uuid IS NOT NULL)),
        CHECK (type <> 'cronjob' OR kind = 'addon')
      )`);
    await q.query(`CREATE INDEX addons_app ON addons (app_uuid, created_at DESC) WHERE app_uuid IS NOT NULL`);
    await q.query(`CREATE INDEX addons_services ON addons (workspace_uuid, created_at DESC) WHERE kind = 'service'`);
    await q.query(`
      CREATE TABLE cronjob_runs (
        uuid uuid PRIMARY KEY,
        cronjob_uuid uuid NOT NULL REFERENCES addons(uuid) ON DELETE CASCADE,
        started_at timestamptz NOT NULL,
        finished_at timestamptz,
        exit_code integer,
        log text NOT NULL DEFAULT ''
      )`);
    await q.query(`CREATE INDEX cronjob_runs_job ON cronjob_runs (cronjob_uuid, started_at DESC)`);
    await q.query(`
      CREATE TABLE addon_backups (
        addon_uuid uuid NOT NULL REFERENCES addons(uuid) ON DELETE CASCADE,
        name text NOT NULL,
        taken_at timestamptz NOT NULL,
        size bigint NOT NULL,
        PRIMARY KEY (addon_uuid, name)
      )`);
    await q.query(`
      CREATE TABLE service_mounts (
        uuid uuid PRIMARY KEY,
        service_uuid uuid NOT NULL REFERENCES addons(uuid) ON DELETE CASCADE,
        app_uuid uuid NOT NULL REFERENCES apps(uuid) ON DELETE CASCADE,
        mount_path text NOT NULL,
        sub_path text,
        state text NOT NULL DEFAULT 'pending',
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (app_uuid, mount_path)
      )`);
    // The simulated data plane (activities/provider/simulated/data.ts).
    await q.query(`
      CREATE TABLE sim_data_clusters (
        id text PRIMARY KEY,
        engine text NOT NULL,
        status text NOT NULL,
        ready_at timestamptz NOT NULL,
        running boolean NOT NULL DEFAULT true,
        public_access boolean NOT NULL DEFAULT false,
        backups boolean NOT NULL DEFAULT false,
        replica_of text,
        cpu_size double precision,
        ram_size bigint,
        password_hash text,
        deleted_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp()
      )`);
    await q.query(`
      CREATE TABLE sim_data_rows (
        seq bigserial PRIMARY KEY,
        cluster_id text NOT NULL REFERENCES sim_data_clusters(id) ON DELETE CASCADE,
        key text NOT NULL,
        value text NOT NULL,
        written_at timestamptz NOT NULL DEFAULT clock_timestamp()
      )`);
    await q.query(`CREATE INDEX sim_data_rows_cluster ON sim_data_rows (cluster_id, key, seq DESC)`);
    await q.query(`
      CREATE TABLE sim_data_backups (
        cluster_id text NOT NULL REFERENCES sim_data_clusters(id) ON DELETE CASCADE,
        name text NOT NULL,
        taken_at timestamptz NOT NULL,
        size bigint NOT NULL,
        snapshot jsonb NOT NULL,
        PRIMARY KEY (cluster_id, name)
      )`);
    await q.query(`
      CREATE TABLE sim_data_dirs (
        cluster_id text NOT NULL REFERENCES sim_data_clusters(id) ON DELETE CASCADE,
        path text NOT NULL,
        PRIMARY KEY (cluster_id, path)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of [
      'sim_data_dirs',
      'sim_data_backups',
      'sim_data_rows',
      'sim_data_clusters',
      'service_mounts',
      'cronjob_runs',
      'addon_backups',
      'addons',
    ]) {
      await q.query(`DROP TABLE ${t}`);
    }
  }
}
