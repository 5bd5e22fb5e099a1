import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** A platform event (contract: Events), persisted once with a stable id before fan-out. */
@Entity('events')
export class PlatformEvent {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('text') type: string;
  /** data.app_id for app-scoped events; null for quota_alert and ping. */
  @Column('uuid', { nullable: true }) app_uuid: string | null;
  /** The envelope as delivered: {id, type, timestamp, data}. */
  @Column('jsonb') payload: { id: string; type: string; timestamp: string; data: Record<string, unknown> };
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}
