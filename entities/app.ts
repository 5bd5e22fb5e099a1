import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/**
 * An app (contract: App). The foundation holds the columns other areas refer to
 * (workspace, project, compute resource, preview parent); the apps area adds the rest.
 */
@Entity('apps')
export class App {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('uuid', { nullable: true }) project_id: string | null;
  @Column('uuid') resource_uuid: string;
  /** Server-assigned: the sent name plus a random suffix. */
  @Column('text') name: string;
  /** The unsuffixed name, valid only inside internal_url. */
  @Column('text') service_name: string;
  @Column('text') label: string;
  @Column('text', { default: 'pending' }) state: string;
  /** For a preview environment's app: the app it was cloned from. */
  @Column('uuid', { nullable: true }) preview_parent_uuid: string | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}
