import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** The first response to a POST carrying Idempotency-Key, replayed for 24 hours. */
@Entity('idempotency_keys')
export class IdempotencyKey {
  @PrimaryColumn('uuid') workspace_uuid: string;
  @PrimaryColumn('text') key: string;
  @Column('text') method: string;
  @Column('text') path: string;
  @Column('text') request_hash: string;
  @Column('integer') status: number;
  @Column('jsonb', { nullable: true }) body: unknown;
  @Column('jsonb', { default: () => "'{}'" }) headers: Record<string, string>;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}
