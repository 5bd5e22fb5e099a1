import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every change that can take away a token's access (a token revoked, expired, deleted or
 * re-scoped; a membership added, moved to another role or removed; a role's permissions
 * changed or the role removed) sends a NOTIFY on `berth_auth` from the changing
 * transaction, delivered to every listening API process when it commits: their token
 * caches (api/middleware/token-cache.ts) drop what they hold. A trigger, so no writer (the
 * CLI, a migration, SQL by hand) can forget it. Marking a token used (`last_used_at`)
 * sends nothing.
 */
export class AuthNotify1733300000000 implements MigrationInterface {
  name = 'AuthNotify1733300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION berth_notify_auth() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('berth_auth', TG_TABLE_NAME);
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER api_tokens_notify_auth
      AFTER UPDATE OF token_hash, workspace_uuid, member_uuid, permissions, expires_at, revoked_at OR DELETE OR TRUNCATE ON api_tokens
      FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_auth()`);
    await q.query(`CREATE TRIGGER members_notify_auth AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON members
      FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_auth()`);
    await q.query(`CREATE TRIGGER roles_notify_auth AFTER UPDATE OR DELETE OR TRUNCATE ON roles
      FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_auth()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER roles_notify_auth ON roles`);
    await q.query(`DROP TRIGGER members_notify_auth ON members`);
    await q.query(`DROP TRIGGER api_tokens_notify_auth ON api_tokens`);
    await q.query(`DROP FUNCTION berth_notify_auth()`);
  }
}
