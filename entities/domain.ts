import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { VerificationStatus } from '../domain/domains';

/** A custom domain of an app (contract: Custom domain). */
@Entity('domains')
export class CustomDomain {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('uuid') app_uuid: string;
  @Column('text') name: string;
  @Column('text', { default: 'pending' }) verification_status: VerificationStatus;
  /** Set while verification is needed; cleared once verified. */
  @Column('text', { nullable: true }) verification_token: string | null;
  /** Set only once verified. */
  @Column('text', { nullable: true }) dns_target: string | null;
  @Column('integer', { default: 0 }) check_attempts: number;
  @Column('text', { nullable: true }) last_check_error: string | null;
  @Column('timestamptz', { nullable: true }) last_checked_at: Date | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}
