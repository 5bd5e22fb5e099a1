import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Custom domains of apps and their DNS verification. */
export class Domains1732800000000 implements MigrationInterface {
  name = 'Domains1732800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE domains (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        app_uuid uuid NOT NULL REFERENCES apps(uuid) ON DELETE CASCADE,
        name text NOT NULL,
        verification_status text NOT NULL DEFAULT 'pending'
          CHECK (verification_status IN ('pending', 'in_progress', 'verified', 'failed')),
        verification_token text,
        dns_target text,
        check_attempts integer NOT NULL DEFAULT 0,
        last_check_error text,
        last_checked_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK (verification_status <> 'verified' OR (verification_token IS NULL AND dns_target IS NOT NULL)),
        CHECK (verification_status = 'verified' OR dns_target IS NULL)
      )`);
    // A domain name is served by one app of the whole platform.
    await q.query(`CREATE UNIQUE INDEX domains_name ON domains (name)`);
    await q.query(`CREATE INDEX domains_app_created ON domains (app_uuid, created_at DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS domains`);
  }
}
