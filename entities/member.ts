import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

@Entity('members')
export class Member {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('uuid') user_uuid: string;
  @Column('uuid') role_uuid: string;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}
