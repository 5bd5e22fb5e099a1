import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The app an audit entry concerns (the app itself, or the app owning the deployment,
 * add-on, cron job, domain, certificate or preview changed), so an app's activity feed
 * shows the changes of everything it owns, deleted things included.
 */
export class AuditApp1732960000000 implements MigrationInterface {
  name = 'AuditApp1732960000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE audit_events ADD COLUMN app_uuid uuid`);
    await q.query(`UPDATE audit_events SET app_uuid = resource_uuid WHERE resource_type = 'app'`);
    await q.query(
      `CREATE INDEX audit_events_app ON audit_events (app_uuid, created_at DESC) WHERE app_uuid IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE audit_events DROP COLUMN IF EXISTS app_uuid`);
  }
}
