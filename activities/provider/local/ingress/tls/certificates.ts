import { createHash } from 'node:crypto';
import { createSecureContext, type SecureContext } from 'node:tls';
import type { DataSource } from 'typeorm';
import type { SecretBox } from '../../../../../domain/secret-box';
import { one } from '../../../../../entities/sql';
import { TtlCache } from '../ttl-cache';
import { isLocalName, type KeyPair, type LocalCa } from './local-ca';

/**
 * The certificate of a host name, best first: one the app's owner uploaded for a verified
 * custom domain of that app (its exact name or a wildcard one level up), then the one Berth
 * obtained by ACME for the domain. Expired ones are never served.
 */
const BY_NAME = `
  SELECT certificate_pem, private_key_sealed FROM (
    SELECT c.certificate_pem, c.private_key_sealed, c.not_after, 0 AS rank
      FROM app_tls_certificates c JOIN domains d ON d.app_uuid = c.app_uuid
     WHERE d.name = $1 AND d.verification_status = 'verified'
       AND ($1 = ANY(c.names) OR $2 = ANY(c.names)) AND c.not_after > now()
    UNION ALL
    SELECT m.certificate_pem, m.private_key_sealed, m.not_after, 1
      FROM domain_certificates m JOIN domains d ON d.uuid = m.domain_uuid
     WHERE d.name = $1 AND d.verification_status = 'verified' AND m.name = d.name
       AND m.certificate_pem IS NOT NULL AND m.not_after > now()
  ) found ORDER BY rank, not_after DESC LIMIT 1`;

/** A local CA leaf is minted again this long before it ends. */
const LEAF_MARGIN_MS = 86_400_000;

/**
 * The ingress's certificates by SNI name: from the database (uploaded or ACME, read through
 * a short cache so a new certificate is served within `ttlMs`), else for names under
 * `localhost` a leaf of the local CA (minted in memory). A secure context is built once per
 * certificate.
 */
export class IngressCertificates {
  private readonly stored: TtlCache<{ certificate_pem: string; private_key_sealed: string } | null>;
  private readonly contexts = new Map<string, SecureContext>();
  private readonly leaves = new Map<string, Promise<KeyPair>>();

  constructor(
    private readonly ds: DataSource,
    private readonly secretBox: SecretBox,
    private readonly ca: LocalCa | null,
    ttlMs = 5000,
  ) {
    this.stored = new TtlCache(ttlMs);
  }

  /** The context to answer a TLS hello for `servername` with; null: no certificate for it. */
  async context(servername: string): Promise<SecureContext | null> {
    const name = servername.toLowerCase().replace(/\.$/, '');
    const row = await this.stored.get(name, (n) => this.load(n));
    if (row) return this.contextOf(row.certificate_pem, () => this.secretBox.open(row.private_key_sealed));
    if (!this.ca || !isLocalName(name)) return null;
    const leaf = await this.leaf(name);
    return this.contextOf(leaf.cert, () => leaf.key);
  }

  /** Whether the ingress has a certificate for `host` (plain HTTP to it is then redirected). */
  async serves(host: string): Promise<boolean> {
    if (this.ca && isLocalName(host)) return true;
    return (await this.stored.get(host, (n) => this.load(n))) !== null;
  }

  private async load(name: string) {
    const dot = name.indexOf('.');
    const wildcard = dot > 0 ? `*${name.slice(dot)}` : name;
    return (
      (await one<{ certificate_pem: string; private_key_sealed: string }>(this.ds, BY_NAME, [name, wildcard])) ?? null
    );
  }

  private leaf(name: string): Promise<KeyPair> {
    const cached = this.leaves.get(name);
    if (cached) {
      const fresh = cached.then((l) => l.notAfter.getTime() - Date.now() > LEAF_MARGIN_MS);
      return fresh.then((ok) => (ok ? cached : this.mint(name)));
    }
    return this.mint(name);
  }

  private mint(name: string): Promise<KeyPair> {
    const minted = this.ca!.issue(name);
    if (this.leaves.size >= 10_000) this.leaves.clear();
    this.leaves.set(name, minted);
    minted.catch(() => this.leaves.delete(name));
    return minted;
  }

  private contextOf(certPem: string, key: () => string): SecureContext {
    const id = createHash('sha256').update(certPem).digest('hex');
    let context = this.contexts.get(id);
    if (!context) {
      context = createSecureContext({ cert: certPem, key: key() });
      if (this.contexts.size > 10_000) this.contexts.clear();
      this.contexts.set(id, context);
    }
    return context;
  }
}
