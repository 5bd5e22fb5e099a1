import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';

/** The operator's access key id: the control plane manages buckets and signs download links with it. */
export const OPERATOR_KEY = 'berth-operator';

interface GrantsFile {
  operatorSecret: string;
  /** access key -> its secret and the one bucket it opens. */
  keys: Record<string, { secret: string; bucket: string }>;
  /** Buckets whose objects anyone may GET/HEAD (public_access). */
  publicBuckets: string[];
}

/** Whose a verified access key is: the operator's (every bucket) or one bucket's. */
export type KeyHolder = { secret: string; bucket: string | null };

/**
 * What the embedded object store knows about who may do what: the operator's secret, each
 * bucket's access key pair (scoped to that bucket) and which buckets are public. Kept in
 * `grants.json` (mode 0600) beside the objects so it survives a restart; the operator's
 * secret of an older store (`accounts.json`) is kept.
 */
export class StoreGrants {
  private constructor(
    private readonly file: string,
    private readonly data: GrantsFile,
  ) {}

  static load(file: string, legacyAccountsFile: string): StoreGrants {
    let data: GrantsFile | null = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as GrantsFile) : null;
    if (!data) {
      const legacy = existsSync(legacyAccountsFile)
        ? (JSON.parse(readFileSync(legacyAccountsFile, 'utf8')) as Record<string, string>)
        : {};
      // Bucket keys of the older store named no bucket: the next start's grant sync re-grants them.
      data = {
        operatorSecret: legacy[OPERATOR_KEY] ?? randomBytes(24).toString('base64url'),
        keys: {},
        publicBuckets: [],
      };
    }
    const grants = new StoreGrants(file, data);
    grants.save();
    return grants;
  }

  get operatorSecret(): string {
    return this.data.operatorSecret;
  }

  holderOf(accessKey: string): KeyHolder | null {
    if (accessKey === OPERATOR_KEY) return { secret: this.data.operatorSecret, bucket: null };
    const key = Object.hasOwn(this.data.keys, accessKey) ? this.data.keys[accessKey] : undefined;
    return key ? { secret: key.secret, bucket: key.bucket } : null;
  }

  isPublic(bucket: string): boolean {
    return this.data.publicBuckets.includes(bucket);
  }

  grant(bucket: string, accessKey: string, secret: string): void {
    if (accessKey === OPERATOR_KEY) throw new Error(`the access key ${OPERATOR_KEY} is the operator's`);
    this.data.keys[accessKey] = { secret, bucket };
    this.save();
  }

  revoke(accessKey: string): void {
    delete this.data.keys[accessKey];
    this.save();
  }

  setPublicRead(bucket: string, publicRead: boolean): void {
    const others = this.data.publicBuckets.filter((b) => b !== bucket);
    this.data.publicBuckets = publicRead ? [...others, bucket] : others;
    this.save();
  }

  private save(): void {
    writeFileSync(this.file, JSON.stringify(this.data), { mode: 0o600 });
    chmodSync(this.file, 0o600);
  }
}
