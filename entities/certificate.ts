import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { CertificateState } from '../domain/certificates';

/** The certificate Berth obtains by ACME for a verified custom domain, and where its issuance or renewal stands. */
@Entity('domain_certificates')
export class DomainCertificate {
  @PrimaryColumn('uuid') domain_uuid: string;
  @Column('text', { default: 'pending' }) state: CertificateState;
  /** The name the certificate was issued for (a renamed domain's old certificate is not served). */
  @Column('text', { nullable: true }) name: string | null;
  @Column('text', { nullable: true }) issuer: string | null;
  @Column('timestamptz', { nullable: true }) not_before: Date | null;
  @Column('timestamptz', { nullable: true }) not_after: Date | null;
  /** When its workflow renews it. */
  @Column('timestamptz', { nullable: true }) renew_at: Date | null;
  @Column('text', { nullable: true }) certificate_pem: string | null;
  /** Sealed with the secret keyring; never returned, logged or passed to a workflow. */
  @Column('text', { nullable: true }) private_key_sealed: string | null;
  /** Orders tried since the last success. */
  @Column('integer', { default: 0 }) attempts: number;
  /** Why the last order failed, in plain words (null after a success). */
  @Column('text', { nullable: true }) last_error: string | null;
  @Column('timestamptz', { nullable: true }) last_attempt_at: Date | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** The platform's ACME account at one directory; its key sealed. */
@Entity('acme_accounts')
export class AcmeAccount {
  @PrimaryColumn('text') directory_url: string;
  @Column('text') account_key_sealed: string;
  @Column('text', { nullable: true }) account_url: string | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}

/** An HTTP-01 answer the ingress serves at `/.well-known/acme-challenge/<token>` while its order is open. */
@Entity('acme_challenges')
export class AcmeChallenge {
  @PrimaryColumn('text') token: string;
  @Column('text') key_authorization: string;
  @Column('text') domain_name: string;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
}
