import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The `local` driver's database servers (activities/provider/local/data): one row per
 * cluster with its port from the data port pool (the unique index is the allocator), its
 * wanted state and its sealed internal passwords; and where an add-on is served
 * (`addons.endpoint`: host, port and public host, written from the driver's live status).
 */
export class LocalData1733000000000 implements MigrationInterface {
  name = 'LocalData1733000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE local_data_clusters (
        id text PRIMARY KEY,
        engine text NOT NULL CHECK (engine IN ('postgres', 'mysql', 'valkey', 'storage')),
        port integer NOT NULL UNIQUE,
        running boolean NOT NULL DEFAULT true,
        public_access boolean NOT NULL DEFAULT false,
        backups boolean NOT NULL DEFAULT false,
        replica_of text REFERENCES local_data_clusters(id) ON DELETE CASCADE,
        username text,
        database text,
        cpu_size double precision NOT NULL DEFAULT 0.5,
        ram_size bigint NOT NULL DEFAULT 536870912,
        secrets_sealed text,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`ALTER TABLE addons ADD COLUMN endpoint jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE addons DROP COLUMN endpoint`);
    await q.query(`DROP TABLE local_data_clusters`);
  }
}
