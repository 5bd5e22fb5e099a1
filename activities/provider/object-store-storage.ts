import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { ApplicationFailure } from '@temporalio/common';
import type { Readable } from 'node:stream';
import type { DataSource } from 'typeorm';
import type { ObjectStoreOptions, StorageDriver, StoredObject } from '../../platform/drivers/storage';

function notFound(err: unknown): boolean {
  if (!(err instanceof S3ServiceException)) return false;
  return err.$metadata.httpStatusCode === 404 || ['NoSuchKey', 'NoSuchBucket', 'NotFound'].includes(err.name);
}

/**
 * The storage part of every driver: a real S3-compatible object store (BERTH_S3_ENDPOINT, or
 * the embedded one): buckets, objects, usage and presigned URLs are real. Static sites'
 * routes (host -> bucket and prefix) are a table the ingress serves from (sim_storage_routes,
 * named when only the simulated driver read it); access-key grants on a store without a key
 * API (the embedded s3rver) are recorded only (sim_storage_keys), which the decisions say.
 */
export function createObjectStoreStorage(options: {
  db: DataSource;
  store: ObjectStoreOptions | undefined;
  /** Called first in every operation: the simulated driver's fault injection (`SimulatedCore.maybeFail`). */
  beforeOperation?: (operation: string) => Promise<void>;
}): StorageDriver {
  const { db, store } = options;
  const core = { db, maybeFail: options.beforeOperation ?? (async () => {}) };
  const client = store
    ? new S3Client({
        endpoint: store.endpoint,
        region: store.region,
        forcePathStyle: true,
        credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
      })
    : null;
  const s3 = (): S3Client => {
    if (!client)
      throw ApplicationFailure.nonRetryable('no object store is configured (BERTH_S3_ENDPOINT)', 'NoObjectStore');
    return client;
  };

  async function list(bucket: string, prefix?: string, limit = Infinity): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    let token: string | undefined;
    do {
      const page = await s3().send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token, MaxKeys: 1000 }),
      );
      for (const o of page.Contents ?? []) {
        out.push({
          key: o.Key!,
          size: Number(o.Size ?? 0),
          last_modified: (o.LastModified ?? new Date(0)).toISOString(),
          etag: o.ETag ?? null,
        });
        if (out.length >= limit) return out;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  async function head(bucket: string, key: string): Promise<StoredObject | null> {
    try {
      const h = await s3().send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      return {
        key,
        size: Number(h.ContentLength ?? 0),
        last_modified: (h.LastModified ?? new Date(0)).toISOString(),
        etag: h.ETag ?? null,
      };
    } catch (err) {
      if (notFound(err)) return null;
      throw err;
    }
  }

  return {
    endpoint: store?.endpoint ?? null,
    async createBucket(name) {
      await core.maybeFail('storage.create_bucket');
      try {
        await s3().send(new CreateBucketCommand({ Bucket: name }));
      } catch (err) {
        if (err instanceof S3ServiceException && ['BucketAlreadyOwnedByYou', 'BucketAlreadyExists'].includes(err.name))
          return;
        throw err;
      }
    },
    async deleteBucket(name) {
      await core.maybeFail('storage.delete_bucket');
      try {
        for (const o of await list(name)) await s3().send(new DeleteObjectCommand({ Bucket: name, Key: o.key }));
        await s3().send(new DeleteBucketCommand({ Bucket: name }));
      } catch (err) {
        if (!notFound(err)) throw err;
      }
      await store?.access?.setPublicRead(name, false);
    },
    async grantKey(bucket, accessKey, secretKey) {
      await core.maybeFail('storage.grant_key');
      await store?.access?.grant(bucket, accessKey, secretKey);
      await core.db.query(
        `INSERT INTO sim_storage_keys (access_key, bucket_name) VALUES ($1, $2) ON CONFLICT (access_key) DO NOTHING`,
        [accessKey, bucket],
      );
    },
    async revokeKey(_bucket, accessKey) {
      await core.maybeFail('storage.revoke_key');
      await store?.access?.revoke(accessKey);
      await core.db.query(`DELETE FROM sim_storage_keys WHERE access_key = $1`, [accessKey]);
    },
    async setPublicRead(bucket, publicRead) {
      await store?.access?.setPublicRead(bucket, publicRead);
    },
    async usage(bucket) {
      const objects = await list(bucket);
      return { usageBytes: objects.reduce((sum, o) => sum + o.size, 0), objectCount: objects.length };
    },
    listObjects: (bucket, options = {}) => list(bucket, options.prefix, options.limit),
    headObject: head,
    async putObject(bucket, key, body, contentType) {
      await s3().send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: body,
          ContentType: contentType,
          ContentLength: body.length,
        }),
      );
      return (await head(bucket, key))!;
    },
    async renameObject(bucket, from, to) {
      const source = `${bucket}/${from.split('/').map(encodeURIComponent).join('/')}`;
      await s3().send(new CopyObjectCommand({ Bucket: bucket, Key: to, CopySource: source }));
      await s3().send(new DeleteObjectCommand({ Bucket: bucket, Key: from }));
    },
    async deleteObject(bucket, key) {
      await s3().send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    async presignDownload(bucket, key, expiresInSeconds) {
      return getSignedUrl(s3(), new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn: expiresInSeconds });
    },
    async publishFiles(bucket, prefix, files) {
      await core.maybeFail('storage.publish_files');
      const wanted = new Set(files.map((f) => `${prefix}${f.path}`));
      for (const f of files) {
        await s3().send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: `${prefix}${f.path}`,
            Body: f.body,
            ContentType: f.contentType,
            ContentLength: f.body.length,
          }),
        );
      }
      for (const o of await list(bucket, prefix))
        if (!wanted.has(o.key)) await s3().send(new DeleteObjectCommand({ Bucket: bucket, Key: o.key }));
      return files.length;
    },
    async routeSite(host, bucket, prefix) {
      await core.maybeFail('storage.route_site');
      await core.db.query(
        `INSERT INTO sim_storage_routes (host, bucket_name, prefix, active) VALUES ($1, $2, $3, true)
         ON CONFLICT (host) DO UPDATE SET bucket_name = EXCLUDED.bucket_name, prefix = EXCLUDED.prefix, active = true, updated_at = now()`,
        [host, bucket, prefix],
      );
    },
    async unrouteSite(host) {
      await core.maybeFail('storage.unroute_site');
      await core.db.query(`DELETE FROM sim_storage_routes WHERE host = $1`, [host]);
    },
    // the ingress's reads: no simulated faults (they are not activities)
    async siteRoute(host) {
      const [row] = await core.db.query(
        `SELECT bucket_name, prefix FROM sim_storage_routes WHERE host = $1 AND active`,
        [host],
      );
      return row ? { bucket: row.bucket_name as string, prefix: row.prefix as string } : null;
    },
    async readObject(bucket, key) {
      try {
        const o = await s3().send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return {
          body: o.Body as Readable,
          size: Number(o.ContentLength ?? 0),
          contentType: o.ContentType ?? null,
          etag: o.ETag ?? null,
          lastModified: o.LastModified ?? null,
        };
      } catch (err) {
        if (notFound(err)) return null;
        throw err;
      }
    },
  };
}
