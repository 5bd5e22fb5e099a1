import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
import type { StorageDriver } from '../../platform/drivers/storage';
import { BUCKET_STATES, publicEndpoint, quotaBytes, usagePercentage, VISIBILITIES } from '../../domain/buckets';
import { Bucket } from '../../entities/bucket';
import { columnsOf } from '../../entities/columns';
import type { SecretBox } from '../../domain/secret-box';
import { unavailable } from '../problem';
import { int, num, obj, oneOf, str, timestamp, uuid } from '../schemas/common';
import { isoRequired } from './common';
import { loadResources, resourceSchema, type ResourceView } from './resources';

/** A bucket with its region (BUCKET_SELECT). */
export type BucketRow = Bucket & { region_code: string; region_domain: string };

/**
 * Buckets with their region: the one SELECT every bucket route reads through. Raw: the
 * region comes through the compute resource, two joins the entity has no relation for.
 */
export const BUCKET_SELECT = `SELECT ${columnsOf(Bucket, 'b')}, g.code AS region_code, g.domain AS region_domain
  FROM buckets b JOIN compute_resources c ON c.uuid = b.resource_uuid JOIN regions g ON g.id = c.region_id`;

export const bucketSchema = obj({
  uuid: uuid().required(),
  name: str().required(),
  label: str().required(),
  state: oneOf(BUCKET_STATES).required(),
  project_id: uuid().nullable().defined(),
  visibility: oneOf(VISIBILITIES).required(),
  s3_endpoint: str().required(),
  s3_access_key: str().required(),
  s3_secret_key: str(),
  region_code: str().required(),
  disk_size: int().required(),
  usage_bytes: int().required(),
  quota_bytes: int().required(),
  usage_percentage: num().required(),
  object_count: int().required(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
  platform: resourceSchema.required(),
  public_endpoint: str().nullable().defined(),
  policy: str().required(),
  acl: str().required(),
});

export const objectSchema = obj({
  key: str().required(),
  size: int().required(),
  last_modified: timestamp().required(),
  etag: str().nullable().defined(),
});

export const downloadUrlSchema = obj({ url: str().required(), expires_at: timestamp().required() });

export const bucketListSchema = yup.array(bucketSchema);

/** Statistics from the object store itself; zero before the bucket exists there. */
async function statistics(
  storage: StorageDriver | undefined,
  b: BucketRow,
): Promise<{ usageBytes: number; objectCount: number }> {
  if (b.state === 'pending' || b.state === 'failed' || !storage) return { usageBytes: 0, objectCount: 0 };
  try {
    return await storage.usage(b.name);
  } catch {
    throw unavailable('the object store did not answer; try again shortly', 5);
  }
}

/**
 * Buckets as the contract shows them, statistics read from the store. The secret key is
 * opened only when `withSecret` (create and show: connection details); lists leave it out.
 */
export async function bucketViews(
  db: EntityManager,
  deps: { storage?: StorageDriver; secretBox: SecretBox },
  workspaceUuid: string,
  buckets: readonly BucketRow[],
  withSecret = false,
) {
  if (buckets.length === 0) return [];
  const resources = new Map<string, ResourceView>(
    (await loadResources(db, workspaceUuid, [...new Set(buckets.map((b) => b.resource_uuid))])).map((r) => [r.uuid, r]),
  );
  return Promise.all(
    buckets.map(async (b) => {
      const stats = await statistics(deps.storage, b);
      const quota = quotaBytes(b.disk_size_gib);
      return {
        uuid: b.uuid,
        name: b.name,
        label: b.label,
        state: b.state,
        project_id: b.project_uuid,
        visibility: b.visibility,
        s3_endpoint: b.s3_endpoint,
        s3_access_key: b.s3_access_key,
        ...(withSecret ? { s3_secret_key: deps.secretBox.open(b.s3_secret_sealed) } : {}),
        region_code: b.region_code,
        disk_size: b.disk_size_gib,
        usage_bytes: stats.usageBytes,
        quota_bytes: quota,
        usage_percentage: usagePercentage(stats.usageBytes, quota),
        object_count: stats.objectCount,
        created_at: isoRequired(b.created_at),
        updated_at: isoRequired(b.updated_at),
        platform: resources.get(b.resource_uuid)!,
        public_endpoint: publicEndpoint(b.visibility, b.name, b.region_domain),
        policy: b.policy,
        acl: b.acl,
      };
    }),
  );
}
