/** Pure rules of buckets (contract: Bucket). */
export const BUCKET_STATES = ['pending', 'active', 'failed', 'blocked'] as const;
export type BucketState = (typeof BUCKET_STATES)[number];

export const VISIBILITIES = ['public_access', 'private_access'] as const;
export type Visibility = (typeof VISIBILITIES)[number];

export const GIB = 2 ** 30;

/** disk_size is in GiB (contract); quota_bytes is the same allocation in bytes. */
export function quotaBytes(diskSizeGib: number): number {
  return diskSizeGib * GIB;
}

/** usage_percentage: usage against quota, rounded to two decimals. */
export function usagePercentage(usageBytes: number, quota: number): number {
  if (quota <= 0) return 0;
  return Math.round((usageBytes / quota) * 10000) / 100;
}

/**
 * An S3-valid bucket name (3-63 chars, lowercase letters, digits, hyphens) made from the
 * label and a random suffix: names are global on the object store.
 */
export function bucketName(label: string, suffix: string): string {
  const slug = label
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return `${slug.length >= 3 ? slug : `bucket${slug ? `-${slug}` : ''}`}-${suffix}`;
}

/** public_endpoint exists only for public buckets (BKT-03): an HTTPS URL under the region's domain. */
export function publicEndpoint(visibility: Visibility, name: string, regionDomain: string): string | null {
  return visibility === 'public_access' ? `https://${name}.storage.${regionDomain}` : null;
}

/** The default bucket policy (a JSON string, BKT-11): public buckets allow anonymous reads. */
export function defaultPolicy(visibility: Visibility, name: string): string {
  const statements =
    visibility === 'public_access'
      ? [
          {
            Sid: 'PublicRead',
            Effect: 'Allow',
            Principal: '*',
            Action: ['s3:GetObject'],
            Resource: [`arn:aws:s3:::${name}/*`],
          },
        ]
      : [];
  return JSON.stringify({ Version: '2012-10-17', Statement: statements });
}

/** The ACL (a JSON string, BKT-11): the bucket's key has full control; public buckets add anonymous read. */
export function defaultAcl(visibility: Visibility, accessKey: string): string {
  const grants: Array<Record<string, unknown>> = [
    { Grantee: { Type: 'CanonicalUser', ID: accessKey }, Permission: 'FULL_CONTROL' },
  ];
  if (visibility === 'public_access')
    grants.push({
      Grantee: { Type: 'Group', URI: 'http://acs.amazonaws.com/groups/global/AllUsers' },
      Permission: 'READ',
    });
  return JSON.stringify({ Owner: { ID: accessKey }, Grants: grants });
}

/** A policy sent by the client must be a JSON object with a Statement array. */
export function policyProblem(policy: string): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(policy);
  } catch {
    return 'policy must be a JSON document';
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return 'policy must be a JSON object';
  if (!Array.isArray((parsed as { Statement?: unknown }).Statement)) return 'policy must have a Statement array';
  return null;
}

/** Object keys: 1-1024 bytes of UTF-8, no leading slash, no `.`/`..` segments, no control characters. */
export function objectKeyProblem(key: string): string | null {
  if (key.length === 0 || new TextEncoder().encode(key).length > 1024) return 'must be 1 to 1024 bytes';
  if (key.startsWith('/')) return 'must not start with a slash';
  if (/[\u0000-\u001f\u007f]/.test(key)) return 'must not contain control characters';
  if (key.split('/').some((s) => s === '.' || s === '..')) return 'must not contain . or .. segments';
  return null;
}
