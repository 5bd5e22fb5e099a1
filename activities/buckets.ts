import { ApplicationFailure } from '@temporalio/common';
import type { Visibility } from '../domain/buckets';
import type { SecretBox } from '../domain/secret-box';
import { one, rows, type Db } from '../entities/sql';
import type { StorageDriver } from '../platform/drivers/storage';
import type { ActivityDeps } from './deps';
import { moveState } from './state';

export interface StorageCleanupInput {
  bucketName: string;
  /** The bucket's access key to revoke (buckets); null for a site's content bucket. */
  accessKey: string | null;
  /** The routed host to remove (static sites). */
  siteHost: string | null;
}

interface BucketGrantRow {
  name: string;
  s3_access_key: string;
  s3_secret_sealed: string;
  visibility: Visibility;
}

/** What the store must know of a bucket: its key pair (scoped to it) and whether anyone may read it. */
async function applyGrants(storage: StorageDriver, secretBox: SecretBox, b: BucketGrantRow): Promise<void> {
  await storage.grantKey(b.name, b.s3_access_key, secretBox.open(b.s3_secret_sealed));
  await storage.setPublicRead(b.name, b.visibility === 'public_access');
}

/**
 * Re-applies every provisioned bucket's grants to the object store (idempotent): run at
 * start, so a store whose grant file was lost or written by an older Berth follows the
 * database again. Returns how many buckets it applied.
 */
export async function syncBucketGrants(db: Db, storage: StorageDriver, secretBox: SecretBox): Promise<number> {
  const buckets = await rows<BucketGrantRow>(
    db,
    `SELECT name, s3_access_key, s3_secret_sealed, visibility FROM buckets WHERE state IN ('active', 'blocked')`,
  );
  for (const b of buckets) await applyGrants(storage, secretBox, b);
  return buckets.length;
}

export function createBucketActivities({
  dataSource,
  secretBox,
  provider,
  logger,
}: Pick<ActivityDeps, 'dataSource' | 'secretBox' | 'provider' | 'logger'>) {
  return {
    /**
     * Creates the bucket on the object store, grants its access key pair (the secret is
     * opened here, never passed through the workflow) and its public read when it is public.
     * False when the bucket is gone.
     */
    async provisionBucket(bucketUuid: string): Promise<boolean> {
      const b = await one<BucketGrantRow & { state: string }>(
        dataSource,
        `SELECT name, s3_access_key, s3_secret_sealed, visibility, state FROM buckets WHERE uuid = $1`,
        [bucketUuid],
      );
      if (!b) return false;
      if (b.state !== 'pending') return true;
      await provider.storage.createBucket(b.name);
      await applyGrants(provider.storage, secretBox, b);
      logger.info({ bucketUuid, bucket: b.name }, 'bucket provisioned on the object store');
      return true;
    },
    /** pending -> failed with the reason (guarded: a bucket that moved on is left alone). */
    async failBucket(bucketUuid: string, reason: string): Promise<boolean> {
      return moveState(
        dataSource,
        { table: 'buckets', uuid: bucketUuid, from: ['pending'], to: 'failed' },
        { failure_reason: reason.slice(0, 500) },
      );
    },
    /** Removes a deleted bucket's (or site's) data from the object store and its key or route (idempotent). */
    async cleanupStorage(input: StorageCleanupInput): Promise<void> {
      if (!provider.storage.endpoint)
        throw ApplicationFailure.nonRetryable('no object store is configured', 'NoObjectStore');
      if (input.siteHost) await provider.storage.unrouteSite(input.siteHost);
      if (input.accessKey) await provider.storage.revokeKey(input.bucketName, input.accessKey);
      await provider.storage.deleteBucket(input.bucketName);
    },
  };
}
