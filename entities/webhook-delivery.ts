import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** One event's delivery to one webhook, updated in place across retries (contract: Webhook delivery). */
@Entity('webhook_deliveries')
export class WebhookDelivery {
  @PrimaryColumn('uuid') uuid: string;
  /** Insertion order, for "newest first" and pruning to the last 50 events. */
  @Column('bigint') seq: string;
  @Column('uuid') webhook_uuid: string;
  @Column('uuid') event_id: string;
  @Column('text') event_type: string;
  @Column('text', { default: 'pending' }) status: 'pending' | 'delivered' | 'failed';
  @Column('integer', { nullable: true }) response_code: number | null;
  @Column('text', { default: '' }) message: string;
  @Column('integer', { default: 0 }) attempts: number;
  /** The last recorded attempt (`<run id>/<cycle>/<attempt>`), so a retried activity counts once. */
  @Column('text', { nullable: true }) attempt_key: string | null;
  @Column('timestamptz', { nullable: true }) last_attempt_at: Date | null;
  /** The exact JSON body POSTed (and signed). */
  @Column('text') body: string;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}
