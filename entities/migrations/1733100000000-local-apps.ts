import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The local apps driver's state (activities/provider/local/apps.ts), what a restart of
 * Berth must find again: the release each app runs, whether it should run, its replicas
 * and public ports, and the environment of its rollout (sealed). `local_app_builds` holds
 * the builds the driver settles itself (a refused method, a parent's release copied).
 */
export class LocalApps1733100000000 implements MigrationInterface {
  name = 'LocalApps1733100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE local_apps (
        app_uuid uuid PRIMARY KEY,
        desired text NOT NULL DEFAULT 'provisioned' CHECK (desired IN ('provisioned', 'running', 'stopped', 'zero')),
        release_id text,
        env_sealed text,
        pending_release_id text,
        pending_env_sealed text,
        rollout_failure text,
        gave_up_at timestamptz,
        replicas integer NOT NULL DEFAULT 1,
        ports jsonb NOT NULL DEFAULT '[]',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE local_app_builds (
        deployment_uuid uuid PRIMARY KEY,
        app_uuid uuid NOT NULL,
        status text NOT NULL CHECK (status IN ('succeeded', 'failed')),
        image text,
        reason text,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX local_app_builds_app ON local_app_builds (app_uuid)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS local_app_builds`);
    await q.query(`DROP TABLE IF EXISTS local_apps`);
  }
}
