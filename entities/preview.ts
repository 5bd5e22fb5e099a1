import { Column, CreateDateColumn, Entity, PrimaryColumn, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import type { PreviewStatus } from '../domain/previews';

/** Preview environment settings of an app; the code-host webhook secret is sealed. */
@Entity('preview_configs')
export class PreviewConfig {
  @PrimaryColumn('uuid') app_uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('boolean', { default: false }) enabled: boolean;
  @Column('boolean', { default: true }) pull_requests: boolean;
  @Column('text', { array: true, default: '{}' }) branch_patterns: string[];
  /** null: parent mode (the parent's own compute resource). */
  @Column('uuid', { nullable: true }) resource_uuid: string | null;
  /** null: the parent's project. */
  @Column('uuid', { nullable: true }) project_uuid: string | null;
  @Column('boolean', { default: false }) use_parent_image: boolean;
  @Column('integer', { nullable: true }) lifetime_hours: number | null;
  @Column('text') webhook_secret_sealed: string;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** A preview environment (contract: Preview environment); its app is an apps row of its own. */
@Entity('preview_environments')
export class PreviewEnvironment {
  @PrimaryGeneratedColumn('increment', { type: 'integer' }) id: number;
  @Column('uuid') workspace_uuid: string;
  @Column('uuid') parent_app_uuid: string;
  /** `pr-<number>` or `branch-<name>`: the workflow id's last part. */
  @Column('text') key: string;
  @Column('text', { default: 'creating' }) status: PreviewStatus;
  @Column('uuid') app_uuid: string;
  @Column('text') app_name: string;
  @Column('uuid') resource_uuid: string;
  @Column('uuid', { nullable: true }) project_uuid: string | null;
  @Column('boolean', { default: false }) use_parent_image: boolean;
  @Column('text') url: string;
  @Column('integer', { nullable: true }) pull_request_number: number | null;
  @Column('text', { default: '' }) pull_request_title: string;
  @Column('text', { default: '' }) pull_request_author: string;
  @Column('text', { default: 'open' }) pull_request_state: 'open' | 'closed';
  @Column('text', { default: '' }) pull_request_url: string;
  @Column('boolean', { default: false }) pull_request_merged: boolean;
  @Column('text') branch: string;
  @Column('text', { default: '' }) base_branch: string;
  /** The head commit to deploy; `generation` counts deploy requests (commits and redeploys). */
  @Column('text') head_sha: string;
  @Column('integer', { default: 1 }) generation: number;
  @Column('text', { default: '' }) commit_sha: string;
  @Column('text', { default: '' }) deployment_error: string;
  @Column('timestamptz', { nullable: true }) last_commit_at: Date | null;
  @Column('timestamptz', { nullable: true }) last_deployed_at: Date | null;
  @Column('timestamptz', { nullable: true }) closed_at: Date | null;
  @Column('timestamptz', { nullable: true }) expires_at: Date | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}
