import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The local VPC driver restarts a workload once per request (an attach, a detach, a
 * peer-route apply): the requests it has carried out, so a retried activity restarts nothing twice.
 */
export class LocalVpcRestarts1733700000000 implements MigrationInterface {
  name = 'LocalVpcRestarts1733700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE local_vpc_restarts (
        request_id text PRIMARY KEY,
        workload_uuid uuid NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE local_vpc_restarts`);
  }
}
