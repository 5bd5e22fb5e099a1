import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { AuditSource } from '../domain/audit';

/** One accepted change: who (member or workspace token, never the token), what, where from, and the diff. */
@Entity('audit_events')
export class AuditEvent {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('text') actor_type: 'member' | 'workspace_token' | 'system';
  @Column('uuid', { nullable: true }) actor_uuid: string | null;
  @Column('text') source: AuditSource;
  @Column('text') action: string;
  @Column('text') resource_type: string;
  @Column('uuid', { nullable: true }) resource_uuid: string | null;
  /** The app the entry concerns (the app itself, or the app owning what changed), for its activity feed. */
  @Column('uuid', { nullable: true }) app_uuid: string | null;
  @Column('jsonb') diff: Record<string, unknown>;
  @Column('text', { nullable: true }) request_id: string | null;
  @Column('text', { nullable: true }) client_ip: string | null;
  @Column('text', { nullable: true }) user_agent: string | null;
  @Column('timestamptz') created_at: Date;
}
