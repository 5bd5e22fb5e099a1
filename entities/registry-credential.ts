import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

@Entity('container_registry_credentials')
export class RegistryCredential {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('text') name: string;
  @Column('text') registry: string;
  @Column('text') username: string;
  @Column('text', { nullable: true }) registry_hostname: string | null;
  /** The registry token, sealed with the secret box; never returned. */
  @Column('text') token_sealed: string;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}
