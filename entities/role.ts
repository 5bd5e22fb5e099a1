import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** Built-in roles (owner, admin: every permission) and custom roles (listed permissions). */
@Entity('roles')
export class Role {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('text') name: string;
  @Column('boolean', { default: false }) builtin: boolean;
  @Column('text', { array: true, default: () => "'{}'" }) permissions: string[];
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}
