import { ApplicationFailure } from '@temporalio/common';
import { one } from '../entities/sql';
import type { ActivityDeps } from './deps';
import { moveState } from './state';

export interface StorageCleanupInput {
  bucketName: string;
  /** The bucket's access key to revoke (buckets); null for a site's content bucket. */
  accessKey: string | null;
  /** The routed host to remove (static sites). */
  siteHost: string | null;
}

export function createBucketActivities({
  dataSource,
  secretBox,
  provider,
  logger,
}: Pick<ActivityDeps, 'dataSource' | 'secretBox' | 'provider' | 'logger'>) {
  return {
    /**
     * Creates the bucket on the object store and grants its access key pair (the secret is
     * opened here, never passed through the workflow). False when the bucket is gone.
     */
    async provisionBucket(bucketUuid: string): Promise<boolean> {
      const b = await one<{ name: string; s3_access_key: string; s3_secret_sealed: string; state: string }>(
        dataSource,
        `SELECT name, s3_access_key, s3_secret_sealed, state FROM buckets WHERE uuid = $1`,
        [bucketUuid],
      );
      if (!b) return false;
      if (b.state !== 'pending') return true;
      await provider.storage.createBucket(b.name);
      await provider.storage.grantKey(b.name, b.s3_access_key, secretBox.open(b.s3_secret_sealed));
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
