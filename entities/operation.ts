import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/**
 * Outbox of workflow starts. A row is written in the same transaction as the entity it
 * acts on; the API starts the workflow right after commit and marks the row, and the
 * reconciler starts any row left unmarked (a crash between commit and start).
 */
@Entity('operations')
export class Operation {
  @PrimaryColumn('uuid') uuid: string;
  @Column('text') workflow_id: string;
  @Column('text') workflow_type: string;
  @Column('text') operation: string;
  @Column('uuid') workspace_uuid: string;
  @Column('uuid') resource_uuid: string;
  @Column('jsonb', { default: () => "'[]'" }) args: unknown[];
  @Column('text') task_queue: string;
  @Column('timestamptz', { nullable: true }) started_at: Date | null;
  @Column('integer', { default: 0 }) start_attempts: number;
  @Column('text', { nullable: true }) last_error: string | null;
  /** Sent with a signal-with-start instead of a plain start (migration 1732965000000). */
  @Column('text', { nullable: true }) signal: string | null;
  @Column('jsonb', { default: () => "'[]'" }) signal_args: unknown[];
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}
