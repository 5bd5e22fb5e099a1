import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { BucketState, Visibility } from '../domain/buckets';

/** A bucket (contract: Bucket) on the object store; its secret key is sealed and never stored in clear. */
@Entity('buckets')
export class Bucket {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('uuid', { nullable: true }) project_uuid: string | null;
  @Column('uuid') resource_uuid: string;
  /** Server-assigned name used in object-storage operations. */
  @Column('text') name: string;
  @Column('text') label: string;
  @Column('text', { default: 'pending' }) state: BucketState;
  @Column('text') visibility: Visibility;
  @Column('integer') disk_size_gib: number;
  @Column('text') s3_endpoint: string;
  @Column('text') s3_access_key: string;
  @Column('text') s3_secret_sealed: string;
  /** JSON strings (contract). */
  @Column('text') policy: string;
  @Column('text') acl: string;
  @Column('text', { nullable: true }) failure_reason: string | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}
