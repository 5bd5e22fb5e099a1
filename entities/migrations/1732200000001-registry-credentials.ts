import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Container registry credentials (contract: Container registry credential). Created with
 * the foundation because apps refer to them (deployment_config.credential_id).
 */
export class RegistryCredentials1732200000001 implements MigrationInterface {
  name = 'RegistryCredentials1732200000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE container_registry_credentials (
        uuid uuid PRIMARY KEY,
        workspace_uuid uuid NOT NULL REFERENCES workspaces(uuid) ON DELETE CASCADE,
        name text NOT NULL,
        registry text NOT NULL,
        username text NOT NULL,
        registry_hostname text,
        token_sealed text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (workspace_uuid, name)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE container_registry_credentials`);
  }
}
