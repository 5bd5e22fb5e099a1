import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The tables whose project column was `project_id`; every other table says `project_uuid`. */
const tables = ['apps', 'addons', 'buckets', 'stacks', 'static_sites'];

/**
 * One name per idea: a foreign key to a project is `project_uuid` in every table. The
 * index `apps_project` follows the column by itself (PostgreSQL keeps columns, not names,
 * in an index); no trigger, function or view names the column. The API's JSON field stays
 * `project_id` (the contract's name).
 */
export class ProjectUuidColumns1733400000000 implements MigrationInterface {
  name = 'ProjectUuidColumns1733400000000';

  async up(q: QueryRunner): Promise<void> {
    for (const table of tables) await q.query(`ALTER TABLE ${table} RENAME COLUMN project_id TO project_uuid`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of tables) await q.query(`ALTER TABLE ${table} RENAME COLUMN project_uuid TO project_id`);
  }
}
