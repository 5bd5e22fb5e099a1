import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Outbox operations that signal a workflow: with `signal` set, the outbox sends that
 * signal with a signal-with-start (a running workflow gets it; a closed or missing one is
 * started again and gets it) instead of a plain start. Signal arguments are identifiers
 * only, like the workflow arguments.
 */
export class OperationSignal1732965000000 implements MigrationInterface {
  name = 'OperationSignal1732965000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE operations ADD COLUMN signal text, ADD COLUMN signal_args jsonb NOT NULL DEFAULT '[]'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE operations DROP COLUMN IF EXISTS signal_args, DROP COLUMN IF EXISTS signal`);
  }
}
