import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Audit1732900000000 implements MigrationInterface {
  name = 'Audit1732900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE audit_events (
        uuid uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        actor_type text NOT NULL CHECK (actor_type IN ('member', 'workspace_token', 'system')),
        actor_uuid uuid,
        source text NOT NULL CHECK (source IN ('api', 'workflow', 'code-host', 'scheduler')),
        action text NOT NULL,
        resource_type text NOT NULL,
        resource_uuid uuid,
        diff jsonb NOT NULL DEFAULT '{}',
        request_id text,
        client_ip text,
        user_agent text,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp()
      )`);
    await q.query(`CREATE INDEX audit_events_workspace_created ON audit_events (workspace_uuid, created_at DESC)`);
    await q.query(`CREATE INDEX audit_events_resource ON audit_events (resource_uuid, created_at DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE audit_events`);
  }
}
