import type { DataSource } from 'typeorm';
import type { SecretBox } from '../../../../domain/secret-box';
import { one, rows } from '../../../../entities/sql';
import { DEFAULT_APP_RUN, type AppRunSpec, type PortSpec } from '../../../../platform/drivers/apps';

/** The local apps driver's durable record of one app (table local_apps). */
export interface AppStateRow {
  app_uuid: string;
  desired: 'provisioned' | 'running' | 'stopped' | 'zero';
  release_id: string | null;
  /** The run spec of the release that serves (sealed: it holds the environment). */
  run_sealed: string | null;
  pending_release_id: string | null;
  pending_run_sealed: string | null;
  rollout_failure: string | null;
  gave_up_at: Date | null;
  replicas: number;
  ports: PortSpec[];
}

type Change = Partial<Omit<AppStateRow, 'app_uuid' | 'gave_up_at'>> & { gave_up_at?: 'now' | null };

/** Reads and writes local_apps and local_app_builds; the sealed run specs are opened here only. */
export class AppStateStore {
  constructor(
    private readonly ds: DataSource,
    private readonly box: SecretBox,
  ) {}

  async get(appUuid: string): Promise<AppStateRow | null> {
    return (await one<AppStateRow>(this.ds, `SELECT * FROM local_apps WHERE app_uuid = $1`, [appUuid])) ?? null;
  }

  all(): Promise<AppStateRow[]> {
    return rows<AppStateRow>(this.ds, `SELECT * FROM local_apps ORDER BY created_at`);
  }

  async create(appUuid: string, replicas: number): Promise<void> {
    await this.ds.query(
      `INSERT INTO local_apps (app_uuid, replicas) VALUES ($1, $2) ON CONFLICT (app_uuid) DO NOTHING`,
      [appUuid, replicas],
    );
  }

  async update(appUuid: string, change: Change): Promise<void> {
    const sets: string[] = [];
    const values: unknown[] = [appUuid];
    for (const [key, value] of Object.entries(change)) {
      if (key === 'gave_up_at' && value === 'now') {
        sets.push('gave_up_at = now()');
        continue;
      }
      values.push(key === 'ports' ? JSON.stringify(value) : value);
      sets.push(`${key} = $${values.length}`);
    }
    await this.ds.query(`UPDATE local_apps SET ${sets.join(', ')}, updated_at = now() WHERE app_uuid = $1`, values);
  }

  async remove(appUuid: string): Promise<void> {
    await this.ds.query(`DELETE FROM local_app_builds WHERE app_uuid = $1`, [appUuid]);
    await this.ds.query(`DELETE FROM local_apps WHERE app_uuid = $1`, [appUuid]);
  }

  seal(run: AppRunSpec): string {
    return this.box.seal(JSON.stringify(run));
  }

  /** The run spec sealed in the row; one sealed before run specs (an environment alone) gets the default size. */
  open(sealed: string | null): AppRunSpec | null {
    if (!sealed) return null;
    const found = JSON.parse(this.box.open(sealed)) as AppRunSpec | Record<string, string>;
    if (typeof found.env === 'object' && typeof found.internalPort === 'number') return found as AppRunSpec;
    return { ...DEFAULT_APP_RUN, env: found as Record<string, string> };
  }

  /** A build the driver settles itself (refused, or a release copied from the parent). */
  async settleBuild(
    deploymentUuid: string,
    appUuid: string,
    outcome: { image: string } | { reason: string },
  ): Promise<void> {
    await this.ds.query(
      `INSERT INTO local_app_builds (deployment_uuid, app_uuid, status, image, reason) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (deployment_uuid) DO NOTHING`,
      [
        deploymentUuid,
        appUuid,
        'image' in outcome ? 'succeeded' : 'failed',
        'image' in outcome ? outcome.image : null,
        'reason' in outcome ? outcome.reason : null,
      ],
    );
  }

  async settledBuild(
    deploymentUuid: string,
  ): Promise<{ status: 'succeeded' | 'failed'; image: string | null; reason: string | null } | null> {
    return (
      (await one<{ status: 'succeeded' | 'failed'; image: string | null; reason: string | null }>(
        this.ds,
        `SELECT status, image, reason FROM local_app_builds WHERE deployment_uuid = $1`,
        [deploymentUuid],
      )) ?? null
    );
  }
}
