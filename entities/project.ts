import { Column, CreateDateColumn, Entity, PrimaryColumn, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

export type ProjectState = 'active' | 'deleting';

@Entity('projects')
export class Project {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('text') name: string;
  @Column('text', { default: '' }) description: string;
  @Column('text', { default: 'active' }) state: ProjectState;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

@Entity('project_restrictions')
export class ProjectRestriction {
  @PrimaryGeneratedColumn('increment', { type: 'integer' }) id: number;
  @Column('uuid') project_uuid: string;
  @Column('text') subject_type: 'user' | 'role';
  @Column('uuid', { nullable: true }) user_uuid: string | null;
  @Column('text', { nullable: true }) role_name: string | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}

/** A compute resource assigned to a project (contract: Project.resources, platform.project_ids). */
@Entity('project_resources')
export class ProjectResource {
  @PrimaryColumn('uuid') project_uuid: string;
  @PrimaryColumn('uuid') resource_uuid: string;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}
