import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM encryption of secrets at rest. A sealed value carries the id of the key
 * that sealed it ("v1.<kid>.<iv>.<tag>.<ciphertext>", base64url parts), so keys rotate:
 * the first key of the ring seals, every key of the ring opens.
 */
export class SecretBox {
  private readonly keys: Map<string, Buffer>;
  private readonly currentKid: string;

  constructor(ring: ReadonlyArray<{ kid: string; key: Buffer }>) {
    if (ring.length === 0) throw new Error('SecretBox needs at least one key');
    for (const { kid, key } of ring) {
      if (key.length !== 32) throw new Error(`secret key "${kid}" must be 32 bytes, got ${key.length}`);
      if (!/^[A-Za-z0-9_-]+$/.test(kid)) throw new Error(`secret key id "${kid}" must be [A-Za-z0-9_-]+`);
    }
    this.keys = new Map(ring.map(({ kid, key }) => [kid, key]));
    this.currentKid = ring[0]!.kid;
  }

  /** Parses "kid:base64[,kid:base64...]" or a bare base64 key (kid "k1"). */
  static fromKeyring(spec: string): SecretBox {
    const entries = spec
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .map((entry) => {
        const i = entry.indexOf(':');
        const [kid, b64] = i === -1 ? ['k1', entry] : [entry.slice(0, i), entry.slice(i + 1)];
        return { kid, key: Buffer.from(b64, 'base64') };
      });
    return new SecretBox(entries);
  }

  static generateKey(): string {
    return randomBytes(32).toString('base64');
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.currentKid)!, iv);
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return ['v1', this.currentKid, iv.toString('base64url'), tag.toString('base64url'), ct.toString('base64url')].join(
      '.',
    );
  }

  open(sealed: string): string {
    const parts = sealed.split('.');
    if (parts.length !== 5 || parts[0] !== 'v1') throw new Error('not a sealed secret');
    const [, kid, iv, tag, ct] = parts as [string, string, string, string, string];
    const key = this.keys.get(kid);
    if (!key) throw new Error(`no key "${kid}" in the keyring`);
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** Whether a value was sealed by an older key and should be re-sealed. */
  isStale(sealed: string): boolean {
    return sealed.split('.')[1] !== this.currentKid;
  }
}
