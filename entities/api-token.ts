import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/**
 * A bearer token: a member's token (permissions from the member's role) or a workspace
 * token (member_uuid null, explicit permission list). Only the SHA-256 is stored.
 */
@Entity('api_tokens')
export class ApiToken {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('uuid', { nullable: true }) member_uuid: string | null;
  @Column('text') name: string;
  @Column('text', { unique: true }) token_hash: string;
  @Column('text', { array: true, nullable: true }) permissions: string[] | null;
  @Column('timestamptz', { nullable: true }) last_used_at: Date | null;
  @Column('timestamptz', { nullable: true }) expires_at: Date | null;
  @Column('timestamptz', { nullable: true }) revoked_at: Date | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}
