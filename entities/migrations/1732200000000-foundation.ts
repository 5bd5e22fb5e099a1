import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Foundation1732200000000 implements MigrationInterface {
  name = 'Foundation1732200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS btree_gist`);
    await q.query(`
      CREATE TABLE workspaces (
        uuid uuid PRIMARY KEY,
        name text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE users (
        uuid uuid PRIMARY KEY,
        email text NOT NULL UNIQUE,
        name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE roles (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        name text NOT NULL,
        builtin boolean NOT NULL DEFAULT false,
        permissions text[] NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (workspace_uuid, name)
      )`);
    await q.query(`
      CREATE TABLE members (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        user_uuid uuid NOT NULL REFERENCES users(uuid) ON DELETE CASCADE,
        role_uuid uuid NOT NULL REFERENCES roles(uuid),
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (workspace_uuid, user_uuid)
      )`);
    await q.query(`
      CREATE TABLE api_tokens (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        member_uuid uuid REFERENCES members(uuid) ON DELETE CASCADE,
        name text NOT NULL,
        token_hash text NOT NULL UNIQUE,
        permissions text[],
        last_used_at timestamptz,
        expires_at timestamptz,
        revoked_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((member_uuid IS NULL) <> (permissions IS NULL))
      )`);
    await q.query(`
      CREATE TABLE regions (
        id serial PRIMARY KEY,
        name text NOT NULL,
        code text NOT NULL UNIQUE,
        domain text NOT NULL
      )`);
    await q.query(`
      CREATE TABLE compute_resources (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        region_id integer NOT NULL REFERENCES regions(id),
        name text NOT NULL,
        state text NOT NULL DEFAULT 'active',
        labels text[] NOT NULL DEFAULT '{}',
        total_cpu_size double precision NOT NULL,
        total_ram_size bigint NOT NULL,
        total_disk_size bigint NOT NULL,
        plan jsonb NOT NULL,
        components jsonb NOT NULL DEFAULT '[]',
        created_by_member_uuid uuid REFERENCES members(uuid) ON DELETE SET NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (workspace_uuid, name)
      )`);
    await q.query(`
      CREATE TABLE resource_allocations (
        owner_uuid uuid PRIMARY KEY,
        owner_type text NOT NULL,
        resource_uuid uuid NOT NULL REFERENCES compute_resources(uuid),
        cpu_size double precision NOT NULL DEFAULT 0,
        ram_size bigint NOT NULL DEFAULT 0,
        disk_size bigint NOT NULL DEFAULT 0
      )`);
    await q.query(`CREATE INDEX resource_allocations_resource ON resource_allocations (resource_uuid)`);
    await q.query(`
      CREATE TABLE projects (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        state text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'deleting')),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (workspace_uuid, name)
      )`);
    await q.query(`CREATE INDEX projects_workspace_created ON projects (workspace_uuid, created_at DESC)`);
    await q.query(`
      CREATE TABLE project_restrictions (
        id serial PRIMARY KEY,
        project_uuid uuid NOT NULL REFERENCES projects(uuid) ON DELETE CASCADE,
        subject_type text NOT NULL CHECK (subject_type IN ('user', 'role')),
        user_uuid uuid REFERENCES users(uuid) ON DELETE CASCADE,
        role_name text,
        created_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((subject_type = 'user' AND user_uuid IS NOT NULL AND role_name IS NULL)
            OR (subject_type = 'role' AND role_name IS NOT NULL AND user_uuid IS NULL))
      )`);
    await q.query(
      `CREATE UNIQUE INDEX project_restrictions_subject ON project_restrictions (project_uuid, subject_type, coalesce(user_uuid::text, role_name))`,
    );
    await q.query(`
      CREATE TABLE project_resources (
        project_uuid uuid NOT NULL REFERENCES projects(uuid) ON DELETE CASCADE,
        resource_uuid uuid NOT NULL REFERENCES compute_resources(uuid) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (project_uuid, resource_uuid)
      )`);
    await q.query(`
      CREATE TABLE apps (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        project_id uuid REFERENCES projects(uuid) ON DELETE SET NULL,
        resource_uuid uuid NOT NULL REFERENCES compute_resources(uuid),
        name text NOT NULL UNIQUE,
        service_name text NOT NULL,
        label text NOT NULL,
        state text NOT NULL DEFAULT 'pending',
        preview_parent_uuid uuid REFERENCES apps(uuid) ON DELETE SET NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX apps_workspace_created ON apps (workspace_uuid, created_at DESC)`);
    await q.query(`
      CREATE TABLE events (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        type text NOT NULL,
        app_uuid uuid,
        payload jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX events_workspace_created ON events (workspace_uuid, created_at DESC)`);
    await q.query(`CREATE INDEX events_app ON events (app_uuid, created_at DESC)`);
    await q.query(`
      CREATE TABLE operations (
        uuid uuid PRIMARY KEY,
        workflow_id text NOT NULL,
        workflow_type text NOT NULL,
        operation text NOT NULL,
        workspace_uuid uuid NOT NULL,
        resource_uuid uuid NOT NULL,
        args jsonb NOT NULL DEFAULT '[]',
        task_queue text NOT NULL,
        started_at timestamptz,
        start_attempts integer NOT NULL DEFAULT 0,
        last_error text,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX operations_unstarted ON operations (created_at) WHERE started_at IS NULL`);
    await q.query(`
      CREATE TABLE idempotency_keys (
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        key text NOT NULL,
        method text NOT NULL,
        path text NOT NULL,
        request_hash text NOT NULL,
        status integer NOT NULL,
        body jsonb,
        headers jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace_uuid, key)
      )`);
    // The simulated data-plane driver's fault injection: the next `remaining` calls of an
    // operation fail (tests and operators feed it; see activities/provider/simulated.ts).
    await q.query(`
      CREATE TABLE sim_faults (
        operation text PRIMARY KEY,
        remaining integer NOT NULL CHECK (remaining >= 0),
        retryable boolean NOT NULL DEFAULT true,
        message text NOT NULL DEFAULT 'injected fault'
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of [
      'sim_faults',
      'idempotency_keys',
      'operations',
      'events',
      'apps',
      'project_resources',
      'project_restrictions',
      'projects',
      'resource_allocations',
      'compute_resources',
      'regions',
      'api_tokens',
      'members',
      'roles',
      'users',
      'workspaces',
    ]) {
      await q.query(`DROP TABLE IF EXISTS ${t}`);
    }
  }
}
