import { randomBytes, randomUUID } from 'node:crypto';
import { bucketName, defaultAcl, defaultPolicy, GIB, quotaBytes, type Visibility } from '../../domain/buckets';
import type { StorageDriver } from '../../platform/drivers/storage';
import { Bucket } from '../../entities/bucket';
import { ComputeResource, ResourceAllocation } from '../../entities/compute-resource';
import { insertReturning, one, updateReturning } from '../../entities/sql';
import { assertProjectVisible } from '../access';
import type { ApiDeps, Caller } from '../context';
import { checkPlacement, type PlacementPaths } from '../placement';
import { notFound, Problem, unavailable, unprocessable } from '../problem';
import { withQuotaAlerts } from '../quota-alerts';
import { ruleScope } from './apps';
import { snapshotOf, type Tx } from './audited-write';

export interface CreateBucketInput {
  label: string;
  /** resource_id (or its deprecated alias platform_id, named by `paths.resource`). */
  resourceId: string;
  paths?: PlacementPaths;
  project_id?: string;
  visibility?: Visibility;
  disk_size?: number;
}

export interface UpdateBucketInput {
  uuid: string;
  label?: string;
  visibility?: Visibility;
  disk_size?: number;
  project_id?: string | null;
  policy?: string;
}

/** The object store, or 503 when the installation has none. */
export function storageOf(deps: Pick<ApiDeps, 'storage'>): StorageDriver & { endpoint: string } {
  const storage = deps.storage;
  if (!storage?.endpoint)
    throw new Problem(503, 'object storage is not configured on this installation (BERTH_S3_ENDPOINT)');
  return storage as StorageDriver & { endpoint: string };
}

/** A call to the object store; a failure that is not a refusal is a 503 (try again). */
export async function storeCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof Problem) throw err;
    throw unavailable('the object store did not answer; try again shortly', 5);
  }
}

/** Locks the compute resource until commit: allocation changes on it are serialized. */
async function lockResource(tx: Tx, resourceUuid: string): Promise<void> {
  await tx.m.findOne(ComputeResource, {
    where: { uuid: resourceUuid },
    select: { uuid: true },
    lock: { mode: 'pessimistic_write' },
  });
}

/** The disk allocation must fit the compute resource (its other allocations counted). */
async function checkCapacity(tx: Tx, resourceUuid: string, ownerUuid: string, gib: number): Promise<void> {
  // Raw: the free disk is the resource's total less a sum over the other allocations, one read.
  const r = await one<{ free: string }>(
    tx.m,
    `SELECT c.total_disk_size - COALESCE((SELECT sum(disk_size) FROM resource_allocations WHERE resource_uuid = c.uuid AND owner_uuid <> $2), 0) AS free
       FROM compute_resources c WHERE c.uuid = $1`,
    [resourceUuid, ownerUuid],
  );
  if (Number(r!.free) < gib * GIB) {
    throw unprocessable(
      `disk_size ${gib} GiB does not fit the compute resource (${Math.floor(Number(r!.free) / GIB)} GiB free)`,
      [{ path: 'body.disk_size', message: 'exceeds the free disk of the compute resource' }],
    );
  }
}

/** The bucket, locked for the change: in the caller's workspace and in a project open to the caller, else 404. */
async function bucketForChange(tx: Tx, caller: Caller, uuid: string): Promise<Bucket> {
  const bucket = await tx.m.findOne(Bucket, {
    where: { uuid, workspace_uuid: caller.workspaceUuid },
    lock: { mode: 'pessimistic_write' },
  });
  if (!bucket) throw notFound('bucket');
  await assertProjectVisible({ caller, deps: tx.deps }, bucket.project_uuid, 'bucket');
  return bucket;
}

/**
 * POST /buckets: a bucket in state pending with a fresh access key pair (the secret sealed),
 * its disk held on the compute resource (quota alerts), its provisioning workflow enqueued.
 */
export async function createBucket(tx: Tx, caller: Caller, input: CreateBucketInput): Promise<Bucket> {
  const storage = storageOf(tx.deps);
  const scope = ruleScope(tx, caller);
  const visibility: Visibility = input.visibility ?? 'private_access';
  const disk = input.disk_size ?? 1;
  await checkPlacement(scope, tx.m, { resourceId: input.resourceId, projectId: input.project_id, paths: input.paths });
  await lockResource(tx, input.resourceId);
  const uuid = randomUUID();
  await checkCapacity(tx, input.resourceId, uuid, disk);
  const name = bucketName(input.label, randomBytes(4).toString('hex'));
  const accessKey = `BRT${randomBytes(10).toString('hex').toUpperCase()}`;
  const bucket = (await insertReturning(tx.m, Bucket, {
    uuid,
    workspace_uuid: caller.workspaceUuid,
    project_uuid: input.project_id ?? null,
    resource_uuid: input.resourceId,
    name,
    label: input.label,
    visibility,
    disk_size_gib: disk,
    s3_endpoint: storage.endpoint,
    s3_access_key: accessKey,
    s3_secret_sealed: tx.deps.secretBox.seal(randomBytes(30).toString('base64url')),
    policy: defaultPolicy(visibility, name),
    acl: defaultAcl(visibility, accessKey),
  }))!;
  await withQuotaAlerts(scope, tx.m, input.resourceId, () =>
    insertReturning(tx.m, ResourceAllocation, {
      owner_uuid: uuid,
      owner_type: 'bucket',
      resource_uuid: input.resourceId,
      disk_size: quotaBytes(disk),
    }),
  );
  await tx.audit({ action: 'bucket.create', resourceUuid: uuid, before: null, after: snapshotOf(bucket) });
  await tx.enqueue({
    operation: 'bucket-provision',
    workflow: 'bucketProvision',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: uuid,
    args: [{ bucketUuid: uuid }],
  });
  return bucket;
}

/**
 * PUT /buckets/{uuid}: label, visibility (the default policy and ACL follow it), disk
 * allocation (must fit the resource and, when shrinking, the current usage), project, policy.
 */
export async function updateBucket(tx: Tx, caller: Caller, input: UpdateBucketInput): Promise<Bucket> {
  const scope = ruleScope(tx, caller);
  const current = await bucketForChange(tx, caller, input.uuid);
  if (input.project_id !== undefined)
    await checkPlacement(scope, tx.m, { resourceId: current.resource_uuid, projectId: input.project_id });
  const disk = input.disk_size ?? current.disk_size_gib;
  if (input.disk_size !== undefined && input.disk_size !== current.disk_size_gib) {
    await lockResource(tx, current.resource_uuid);
    await checkCapacity(tx, current.resource_uuid, current.uuid, disk);
    if (input.disk_size < current.disk_size_gib && current.state === 'active') {
      const { usageBytes } = await storeCall(() => storageOf(tx.deps).usage(current.name));
      if (usageBytes > quotaBytes(disk)) {
        throw unprocessable(`the bucket holds ${usageBytes} bytes, more than ${disk} GiB`, [
          { path: 'body.disk_size', message: 'smaller than the current usage' },
        ]);
      }
    }
    await withQuotaAlerts(scope, tx.m, current.resource_uuid, () =>
      tx.m.update(ResourceAllocation, { owner_uuid: current.uuid }, { disk_size: quotaBytes(disk) }),
    );
  }
  const visibility = input.visibility ?? current.visibility;
  const visibilityChanged = visibility !== current.visibility;
  const policy =
    input.policy ??
    (visibilityChanged && current.policy === defaultPolicy(current.visibility, current.name)
      ? defaultPolicy(visibility, current.name)
      : current.policy);
  const updated = (await updateReturning(tx.m, Bucket, current.uuid, {
    label: input.label ?? current.label,
    visibility,
    disk_size_gib: disk,
    project_uuid: input.project_id === undefined ? current.project_uuid : input.project_id,
    policy,
    acl: visibilityChanged ? defaultAcl(visibility, current.s3_access_key) : current.acl,
  }))!;
  // Last, so a store that does not answer (503) rolls the change back.
  if (visibilityChanged)
    await storeCall(() => storageOf(tx.deps).setPublicRead(current.name, visibility === 'public_access'));
  await tx.audit({
    action: 'bucket.update',
    resourceUuid: current.uuid,
    before: snapshotOf(current),
    after: snapshotOf(updated),
  });
  return updated;
}

/** DELETE /buckets/{uuid}: the bucket and its disk allocation go; its cleanup workflow revokes the key and removes the objects. */
export async function deleteBucket(tx: Tx, caller: Caller, input: { uuid: string }): Promise<void> {
  const bucket = await bucketForChange(tx, caller, input.uuid);
  await tx.m.delete(ResourceAllocation, { owner_uuid: bucket.uuid });
  await tx.m.delete(Bucket, { uuid: bucket.uuid });
  await tx.audit({ action: 'bucket.delete', resourceUuid: bucket.uuid, before: snapshotOf(bucket), after: null });
  await tx.enqueue({
    operation: 'bucket-delete',
    workflow: 'storageCleanup',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: bucket.uuid,
    args: [{ bucketName: bucket.name, accessKey: bucket.s3_access_key, siteHost: null }],
  });
}
