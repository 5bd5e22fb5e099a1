import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Certificates Berth obtains by ACME (RFC 8555): one per custom domain (its issuance and
 * renewal state, the certificate, its private key sealed), the platform's ACME account per
 * directory (its key sealed), and the HTTP-01 answers the ingress serves while an order is open.
 */
export class Certificates1733600000000 implements MigrationInterface {
  name = 'Certificates1733600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE domain_certificates (
        domain_uuid uuid PRIMARY KEY REFERENCES domains(uuid) ON DELETE CASCADE,
        state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'issuing', 'issued', 'failed')),
        -- the name the certificate was issued for (a renamed domain is not served with it)
        name text,
        issuer text,
        not_before timestamptz,
        not_after timestamptz,
        renew_at timestamptz,
        certificate_pem text,
        private_key_sealed text,
        attempts integer NOT NULL DEFAULT 0,
        last_error text,
        last_attempt_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((certificate_pem IS NULL) = (private_key_sealed IS NULL))
      )`);
    await q.query(`
      CREATE TABLE acme_accounts (
        directory_url text PRIMARY KEY,
        account_key_sealed text NOT NULL,
        account_url text,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE acme_challenges (
        token text PRIMARY KEY,
        key_authorization text NOT NULL,
        domain_name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS acme_challenges`);
    await q.query(`DROP TABLE IF EXISTS acme_accounts`);
    await q.query(`DROP TABLE IF EXISTS domain_certificates`);
  }
}
