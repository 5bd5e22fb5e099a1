import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** The local apps driver's record of one app (activities/provider/local/app-state.ts). */
@Entity('local_apps')
export class LocalApp {
  @PrimaryColumn('uuid') app_uuid: string;
  /** provisioned (never started), running, stopped, zero (free-plan sleep). */
  @Column('text', { default: 'provisioned' }) desired: string;
  /** The release that serves the app. */
  @Column('text', { nullable: true }) release_id: string | null;
  /** The environment of that release's rollout, sealed with the secret box. */
  @Column('text', { nullable: true }) env_sealed: string | null;
  /** A rollout under way (its release and sealed environment). */
  @Column('text', { nullable: true }) pending_release_id: string | null;
  @Column('text', { nullable: true }) pending_env_sealed: string | null;
  /** Why the last rollout did not take over (null: it did, or none ran). */
  @Column('text', { nullable: true }) rollout_failure: string | null;
  /** Set when the supervisor gave up on crashing replicas (cleared by a start, restart or rollout). */
  @Column('timestamptz', { nullable: true }) gave_up_at: Date | null;
  @Column('integer', { default: 1 }) replicas: number;
  @Column('jsonb', { default: () => "'[]'" }) ports: Array<{
    internalPort: number;
    protocol: string;
    externalPort: number | null;
  }>;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** A build the local apps driver settled itself, without the builder. */
@Entity('local_app_builds')
export class LocalAppBuild {
  @PrimaryColumn('uuid') deployment_uuid: string;
  @Column('uuid') app_uuid: string;
  @Column('text') status: string;
  @Column('text', { nullable: true }) image: string | null;
  @Column('text', { nullable: true }) reason: string | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}
