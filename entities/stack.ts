import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { Manifest } from '../domain/compose';

const bigint = { to: (v: number) => v, from: (v: string | null) => (v === null ? v : Number(v)) };

/** A stack (contract: Stack): services of a compose file in a Git repository. */
@Entity('stacks')
export class Stack {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('uuid', { nullable: true }) project_uuid: string | null;
  @Column('uuid') resource_uuid: string;
  @Column('text') name: string;
  @Column('text') label: string;
  @Column('text') compose_path: string;
  @Column('text') repository: string;
  @Column('text') branch: string;
  @Column('boolean', { default: false }) auto_deploy_enabled: boolean;
  @Column('uuid', { nullable: true }) credential_id: string | null;
  /** The analyzed compose manifest. */
  @Column('jsonb') manifest: Manifest;
  /** Values of the required variables, sealed as one JSON document. */
  @Column('text') variables_sealed: string;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

@Entity('stack_deployments')
export class StackDeployment {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') stack_uuid: string;
  @Column('text', { default: 'pending' }) state: string;
  @Column('text', { nullable: true }) subevent: string | null;
  @Column('text', { nullable: true }) commit_sha: string | null;
  @Column('jsonb', { default: () => "'{}'" }) validation_errors: Record<string, unknown>;
  @Column('timestamptz', { nullable: true }) published_at: Date | null;
  @Column('timestamptz', { nullable: true }) completed_at: Date | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** A materialized compose service: an app (row in apps, same uuid) or a managed add-on. */
@Entity('stack_items')
export class StackItem {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') stack_uuid: string;
  @Column('text') compose_service_name: string;
  @Column('text') compose_service_type: string;
  @Column('text') item_type: 'app' | 'addon';
  @Column('text') item_name: string;
  @Column('text', { default: 'pending' }) status: string;
  @Column('double precision', { default: 0 }) cpu_size: number;
  @Column('bigint', { default: 0, transformer: bigint }) ram_size: number;
  @Column('bigint', { default: 0, transformer: bigint }) disk_size: number;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}
