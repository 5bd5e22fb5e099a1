import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** A person (or service identity) that can be a member of several workspaces. */
@Entity('users')
export class User {
  @PrimaryColumn('uuid') uuid: string;
  @Column('text', { unique: true }) email: string;
  @Column('text') name: string;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}
