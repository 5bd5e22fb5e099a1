import type { Readable } from 'node:stream';

/**
 * The storage part of the data-plane driver: buckets and their objects on an
 * S3-compatible object store, access keys on it, and static-site routing. The driver
 * interfaces live in platform/drivers/ (implementations in activities/provider/): api/ reads
 * buckets through this one and never imports activities/.
 */

/**
 * Who may use a bucket on the object store (the embedded store offers this): a bucket's own
 * access key pair opens that bucket only; a public bucket's objects are readable by anyone.
 */
export interface AccessRegistry {
  grant(bucket: string, accessKey: string, secretKey: string): Promise<void>;
  revoke(accessKey: string): Promise<void>;
  /** Anonymous GET/HEAD of the bucket's objects on (public_access) or off. */
  setPublicRead(bucket: string, publicRead: boolean): Promise<void>;
}

/** Where the object store is and the operator's credentials for it. */
export interface ObjectStoreOptions {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** How bucket keys and public reads are granted on this store; absent for a store without such an API. */
  access?: AccessRegistry;
}

export interface StoredObject {
  key: string;
  size: number;
  last_modified: string;
  etag: string | null;
}

export interface SiteFile {
  /** Path inside the published site, with forward slashes. */
  path: string;
  body: Buffer;
  contentType: string;
}

export interface StorageDriver {
  /** The object store's endpoint, or null when none is configured. */
  readonly endpoint: string | null;
  /** Creates the bucket (idempotent). */
  createBucket(name: string): Promise<void>;
  /** Removes every object, then the bucket (idempotent). */
  deleteBucket(name: string): Promise<void>;
  /** Grants a bucket access key pair on the store (idempotent). */
  grantKey(bucket: string, accessKey: string, secretKey: string): Promise<void>;
  revokeKey(bucket: string, accessKey: string): Promise<void>;
  /** Anonymous GET/HEAD of the bucket's objects on (public_access) or off (idempotent). */
  setPublicRead(bucket: string, publicRead: boolean): Promise<void>;
  /** Usage counted from the store's own listing. */
  usage(bucket: string): Promise<{ usageBytes: number; objectCount: number }>;
  listObjects(bucket: string, options?: { prefix?: string; limit?: number }): Promise<StoredObject[]>;
  headObject(bucket: string, key: string): Promise<StoredObject | null>;
  putObject(bucket: string, key: string, body: Buffer, contentType: string): Promise<StoredObject>;
  /** Copies then deletes: S3 has no rename. */
  renameObject(bucket: string, from: string, to: string): Promise<void>;
  deleteObject(bucket: string, key: string): Promise<void>;
  /** A presigned GET URL for the object, signed with the operator's credentials. */
  presignDownload(bucket: string, key: string, expiresInSeconds: number): Promise<string>;
  /** Replaces the content under `prefix` with `files`. */
  publishFiles(bucket: string, prefix: string, files: readonly SiteFile[]): Promise<number>;
  /** Points a site host at a bucket prefix (the edge routing of static sites). */
  routeSite(host: string, bucket: string, prefix: string): Promise<void>;
  unrouteSite(host: string): Promise<void>;
  /** Where a routed site host serves from (the ingress's read of the edge routing); null when not routed. */
  siteRoute(host: string): Promise<{ bucket: string; prefix: string } | null>;
  /** An object's content as a stream (the ingress serves sites with it); null when missing. */
  readObject(bucket: string, key: string): Promise<ObjectContent | null>;
}

export interface ObjectContent {
  body: Readable;
  size: number;
  contentType: string | null;
  etag: string | null;
  lastModified: Date | null;
}
