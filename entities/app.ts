import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

export interface AppQuota {
  /** cores */
  cpu_size: number;
  /** bytes */
  ram_size: number;
  /** bytes */
  disk_size: number;
  replicas: number;
}

export interface HealthCheck {
  kind: 'liveness' | 'readiness' | 'startup';
  protocol: 'http' | 'tcp';
  path: string | null;
  port: number;
  initial_delay_seconds: number;
  period_seconds: number;
  timeout_seconds: number;
  failure_threshold: number;
}

export interface ScalingProfile {
  min_replicas: number;
  max_replicas: number;
  target_cpu_percent: number | null;
}

/**
 * An app (contract: App). The foundation holds the columns other areas refer to
 * (workspace, project, compute resource, preview parent); the apps area adds the rest,
 * each with a default so minimal inserts of other areas keep working.
 */
@Entity('apps')
export class App {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('uuid', { nullable: true }) project_uuid: string | null;
  @Column('uuid') resource_uuid: string;
  /** Server-assigned: the sent name plus a random suffix. */
  @Column('text') name: string;
  /** The unsuffixed name, valid only inside internal_url. */
  @Column('text') service_name: string;
  @Column('text') label: string;
  @Column('text', { default: 'pending' }) state: string;
  /** For a preview environment's app: the app it was cloned from. */
  @Column('uuid', { nullable: true }) preview_parent_uuid: string | null;
  @Column('text', { default: 'git_push' }) deployment_method: string;
  /** Varies by method: repository, branch, image, credential_id (never a secret). */
  @Column('jsonb', { default: () => "'{}'" }) deployment_config: Record<string, unknown>;
  @Column('text', { default: 'auto' }) builder: string;
  @Column('boolean', { default: true }) manage_dns_records: boolean;
  @Column('boolean', { default: false }) maintenance: boolean;
  @Column('boolean', { default: false }) private_access: boolean;
  @Column('boolean', { default: true }) allow_connections: boolean;
  @Column('boolean', { default: false }) basic_auth_enabled: boolean;
  @Column('text', { nullable: true }) basic_auth_username: string | null;
  /** Sealed with the secret box; never returned. */
  @Column('text', { nullable: true }) basic_auth_password_sealed: string | null;
  @Column('jsonb') quota: AppQuota;
  @Column('integer', { default: 8080 }) internal_port: number;
  @Column('jsonb', { default: () => "'[]'" }) health_checks: HealthCheck[];
  @Column('jsonb') scaling_profile: ScalingProfile;
  /** A clone made with use_parent_image runs its parent's image. */
  @Column('uuid', { nullable: true }) parent_app_uuid: string | null;
  @Column('boolean', { default: false }) parent_image_auto_sync: boolean;
  @Column('uuid', { nullable: true }) created_by_member_uuid: string | null;
  /** Since when a change (a project variable) waits for a redeploy; cleared by the next deployment. */
  @Column('timestamptz', { nullable: true }) needs_redeploy_since: Date | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** One deployment of an app (contract: App deployment). */
@Entity('app_deployments')
export class AppDeployment {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') app_uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('text', { default: 'pending' }) state: string;
  @Column('text') deployment_method: string;
  @Column('text', { nullable: true }) commit_sha: string | null;
  @Column('text', { nullable: true }) commit_message: string | null;
  @Column('text', { nullable: true }) branch: string | null;
  @Column('text', { nullable: true }) image: string | null;
  /** Why it failed (deploy_ended data.message). */
  @Column('text', { nullable: true }) message: string | null;
  @Column('timestamptz', { nullable: true }) logs_stored_at: Date | null;
  @Column('timestamptz', { nullable: true }) finished_at: Date | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** An environment variable of an app; the value is sealed, and never returned when secret. */
@Entity('app_variables')
export class AppVariable {
  @PrimaryColumn('uuid') app_uuid: string;
  @PrimaryColumn('text') key: string;
  @Column('text') value_sealed: string;
  @Column('boolean', { default: false }) secret: boolean;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** A secret file mounted into an app; the content is sealed and never returned. */
@Entity('app_secret_files')
export class AppSecretFile {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') app_uuid: string;
  @Column('text') name: string;
  @Column('text') content_sealed: string;
  @Column('integer') size_bytes: number;
  @Column('text') sha256: string;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** The public endpoint (load balancer) of a compute resource. */
@Entity('resource_endpoints')
export class ResourceEndpoint {
  @PrimaryColumn('uuid') resource_uuid: string;
  @Column('uuid') endpoint_id: string;
  @Column('integer') seq: number;
  @Column('text') hostname: string;
  @Column('inet') ipv4_primary: string;
  @Column('inet') ipv4_secondary: string;
  @Column('inet') ipv6_primary: string;
  @Column('inet') ipv6_secondary: string;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}

/** A port of an app; a public one holds an external port from its resource's pool. */
@Entity('app_ports')
export class AppPort {
  @PrimaryColumn('integer') id: number;
  @Column('uuid') app_uuid: string;
  @Column('uuid') resource_uuid: string;
  @Column('integer') internal_port: number;
  @Column('text', { default: 'tcp' }) protocol: string;
  @Column('boolean', { default: false }) public: boolean;
  @Column('integer', { nullable: true }) external_port: number | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** A TLS certificate of an app; the private key is sealed and never returned. */
@Entity('app_tls_certificates')
export class AppTlsCertificate {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') app_uuid: string;
  @Column('text') subject: string;
  @Column('text') issuer: string;
  @Column('text', { array: true, default: () => "'{}'" }) names: string[];
  @Column('text') fingerprint_sha256: string;
  @Column('timestamptz') not_before: Date;
  @Column('timestamptz') not_after: Date;
  @Column('text') certificate_pem: string;
  @Column('text') private_key_sealed: string;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}
