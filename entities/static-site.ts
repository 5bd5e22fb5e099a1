import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { SiteState } from '../domain/static-sites';

/** What `static_sites.deployment_config` holds (jsonb): the git source of the site; unset keys take the contract's defaults. */
export interface SiteSourceConfig {
  repository?: string;
  branch?: string;
  build_command?: string | null;
  publish_directory?: string;
}

/** A static site (contract: Static site): content in a bucket of its own that is never exposed. */
@Entity('static_sites')
export class StaticSite {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('uuid', { nullable: true }) project_uuid: string | null;
  @Column('integer') region_id: number;
  /** Fixed: the name sent at creation, no suffix. */
  @Column('text') name: string;
  @Column('text') label: string;
  @Column('text', { default: 'pending' }) state: SiteState;
  @Column('text') content_bucket: string;
  @Column('jsonb', { default: () => "'{}'" }) deployment_config: SiteSourceConfig;
  @Column('uuid', { nullable: true }) credential_id: string | null;
  @Column('text', { nullable: true }) failure_reason: string | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

@Entity('static_site_deployments')
export class StaticSiteDeployment {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') site_uuid: string;
  @Column('text', { default: 'pending' }) state: 'pending' | 'running' | 'completed' | 'failed';
  @Column('text', { nullable: true }) commit_sha: string | null;
  @Column('integer', { nullable: true }) file_count: number | null;
  @Column('text', { nullable: true }) message: string | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @Column('timestamptz', { nullable: true }) completed_at: Date | null;
}
