import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** An outbound webhook (DESIGN: webhook record fields). */
@Entity('webhooks')
export class Webhook {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('text') url: string;
  @Column('text', { default: '' }) description: string;
  /** Subscribed event types; empty means every subscribable type. */
  @Column('text', { array: true, default: '{}' }) events: string[];
  /** Apps whose events match; empty means the whole workspace. */
  @Column('uuid', { array: true, default: '{}' }) app_uuids: string[];
  @Column('boolean', { default: false }) include_review_apps: boolean;
  @Column('boolean', { default: true }) enabled: boolean;
  @Column('integer', { default: 0 }) consecutive_failures: number;
  @Column('timestamptz', { nullable: true }) disabled_at: Date | null;
  /** Set when failures disabled the webhook, cleared once the admins were e-mailed. */
  @Column('boolean', { default: false }) disable_notice_pending: boolean;
  /** The `whsec_` signing secret, sealed with the secret box; returned once, at creation. */
  @Column('text') secret_sealed: string;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}
