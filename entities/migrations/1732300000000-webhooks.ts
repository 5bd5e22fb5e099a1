import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Outbound webhooks (contract: Events, Webhooks, Webhook delivery). One delivery row per
 * (webhook, event), updated in place across retries; `body` is the exact JSON POSTed.
 */
export class Webhooks1732300000000 implements MigrationInterface {
  name = 'Webhooks1732300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhooks (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        url text NOT NULL,
        description text NOT NULL DEFAULT '',
        events text[] NOT NULL DEFAULT '{}',
        app_uuids uuid[] NOT NULL DEFAULT '{}',
        include_review_apps boolean NOT NULL DEFAULT false,
        enabled boolean NOT NULL DEFAULT true,
        consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
        disabled_at timestamptz,
        disable_notice_pending boolean NOT NULL DEFAULT false,
        secret_sealed text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX webhooks_workspace ON webhooks (workspace_uuid, created_at DESC)`);
    await q.query(`
      CREATE TABLE webhook_deliveries (
        uuid uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        webhook_uuid uuid NOT NULL REFERENCES webhooks(uuid) ON DELETE CASCADE,
        event_id uuid NOT NULL,
        event_type text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        response_code integer,
        message text NOT NULL DEFAULT '',
        attempts integer NOT NULL DEFAULT 0,
        attempt_key text,
        last_attempt_at timestamptz,
        body text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (webhook_uuid, event_id)
      )`);
    await q.query(`CREATE INDEX webhook_deliveries_recent ON webhook_deliveries (webhook_uuid, seq DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE webhook_deliveries`);
    await q.query(`DROP TABLE webhooks`);
  }
}
