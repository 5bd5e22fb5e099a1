import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/**
 * An add-on attached to an app (kind `addon`), a standalone service (kind `service`) or a
 * cron job (kind `addon`, type `cronjob`): contract "Add-on". Routes use raw SQL; the entity
 * documents the columns.
 */
/** Where a database is served: `host:port` for clients on this machine, `public_host:port` when publicly accessible. */
export interface AddonEndpoint {
  host: string;
  port: number;
  public_host: string;
}

@Entity('addons')
export class Addon {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('text') kind: 'addon' | 'service';
  @Column('uuid', { nullable: true }) app_uuid: string | null;
  @Column('uuid', { nullable: true }) project_uuid: string | null;
  @Column('uuid') resource_uuid: string;
  @Column('text') type: string;
  @Column('text') name: string;
  @Column('text') label: string;
  @Column('text') state: string;
  @Column('jsonb') quota: { cpu_size?: number; ram_size?: number; disk_size?: number };
  @Column('jsonb') settings: Record<string, unknown>;
  @Column('boolean') public_access: boolean;
  /** The configured setting (changes when an update is accepted). */
  @Column('boolean') backup_enabled: boolean;
  /** What the cluster runs; a workflow brings it in line with backup_enabled. */
  @Column('boolean') backup_active: boolean;
  @Column('integer') settings_generation: number;
  @Column('text', { nullable: true }) database_name: string | null;
  @Column('text', { nullable: true }) username: string | null;
  /** Generated password, sealed with the secret box; never returned except in connection details. */
  @Column('text', { nullable: true }) password_sealed: string | null;
  @Column('uuid', { nullable: true }) replica_of: string | null;
  @Column('uuid', { nullable: true }) restored_from: string | null;
  @Column('text', { nullable: true }) cluster_id: string | null;
  /** Where the data plane serves it (host, port, public host), from the driver's live status; null: not known (the simulated driver). */
  @Column('jsonb', { nullable: true }) endpoint: AddonEndpoint | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** A storage service mounted into an app (optionally a sub_path of it). */
@Entity('service_mounts')
export class ServiceMount {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') service_uuid: string;
  @Column('uuid') app_uuid: string;
  @Column('text') mount_path: string;
  @Column('text', { nullable: true }) sub_path: string | null;
  @Column('text', { default: 'pending' }) state: string;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}
