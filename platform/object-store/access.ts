/**
 * Who may do what on the embedded object store, once the gateway knows who asks:
 * - the operator (Berth itself): everything;
 * - a bucket's access key: everything on that bucket's objects, reading and listing the
 *   bucket, never another bucket (a copy from another bucket included), never creating,
 *   deleting or configuring a bucket (PUT/DELETE on the bucket itself), never ListBuckets;
 * - anyone else (no signature): GET and HEAD of an object of a public bucket, nothing more:
 *   no listing, no write, no subresource (`?acl`, `?tagging`, ...).
 */
export type Caller = { kind: 'anonymous' } | { kind: 'operator' } | { kind: 'bucket-key'; bucket: string };

export interface S3Operation {
  method: string;
  /** The bucket addressed (null: the service, e.g. ListBuckets). */
  bucket: string | null;
  /** The object key (null: the bucket itself). */
  key: string | null;
  /** The query names a subresource (acl, policy, uploads, ...). */
  subresource: boolean;
  /** The bucket of `x-amz-copy-source` (CopyObject, UploadPartCopy), if any. */
  copySourceBucket: string | null;
}

/** S3 subresources: query parameters that make a request about something other than the object's content. */
export const SUBRESOURCES = new Set([
  'accelerate',
  'acl',
  'analytics',
  'attributes',
  'cors',
  'delete',
  'encryption',
  'intelligent-tiering',
  'inventory',
  'legal-hold',
  'lifecycle',
  'location',
  'logging',
  'metrics',
  'notification',
  'object-lock',
  'ownershipControls',
  'partNumber',
  'policy',
  'policyStatus',
  'publicAccessBlock',
  'replication',
  'requestPayment',
  'restore',
  'retention',
  'select',
  'tagging',
  'torrent',
  'uploadId',
  'uploads',
  'versionId',
  'versioning',
  'versions',
  'website',
]);

export function mayDo(caller: Caller, op: S3Operation, isPublic: (bucket: string) => boolean): boolean {
  if (caller.kind === 'operator') return true;
  if (caller.kind === 'bucket-key') {
    if (op.bucket !== caller.bucket) return false;
    if (op.copySourceBucket !== null && op.copySourceBucket !== caller.bucket) return false;
    return !(op.key === null && (op.method === 'PUT' || op.method === 'DELETE'));
  }
  return (
    (op.method === 'GET' || op.method === 'HEAD') &&
    op.bucket !== null &&
    op.key !== null &&
    !op.subresource &&
    isPublic(op.bucket)
  );
}
