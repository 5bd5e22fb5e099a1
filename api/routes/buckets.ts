import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
import { objectKeyProblem, policyProblem, quotaBytes, VISIBILITIES } from '../../domain/buckets';
import { one } from '../../entities/sql';
import { assertProjectVisible, visibleProjectsClause } from '../access';
import { recordAudit } from '../audit';
import { write } from '../commands/audited-write';
import { createBucket, deleteBucket, storageOf, storeCall, updateBucket } from '../commands/buckets';
import { selectPage, type Page } from '../pagination';
import { conflict, notFound, Problem, unprocessable } from '../problem';
import { route, type AnyRouteContext } from '../route';
import { int, obj, oneOf, str, uuid } from '../schemas/common';
import {
  BUCKET_SELECT,
  bucketListSchema,
  bucketSchema,
  bucketViews,
  downloadUrlSchema,
  objectSchema,
  type BucketRow,
} from '../views/buckets';

const TAG = 'buckets';
/** platform_id was deprecated in favour of resource_id (Versioning 2); RFC 9745 date. */
const PLATFORM_ID_DEPRECATED = '@1732579200';
const MAX_OBJECT_BYTES = 700 * 1024;

const diskSize = () => int().min(1, '${path} must be at least 1 (GiB)').max(100_000);
const key = () =>
  str()
    .max(1024)
    .test('object-key', function check(v) {
      if (v === undefined) return true;
      const problem = objectKeyProblem(v);
      return problem ? this.createError({ message: `\${path} ${problem}` }) : true;
    });
const policy = () =>
  str()
    .max(20_000)
    .test('policy', function check(v) {
      if (v === undefined) return true;
      const problem = policyProblem(v);
      return problem ? this.createError({ message: problem }) : true;
    });

const createBody = obj({
  label: str().trim().min(1).max(100).required(),
  resource_id: uuid(),
  platform_id: uuid().meta({ jsonSchema: { deprecated: true, description: 'Deprecated: use resource_id.' } } as never),
  project_id: uuid(),
  visibility: oneOf(VISIBILITIES),
  disk_size: diskSize(),
});
const updateBody = obj({
  label: str().trim().min(1).max(100),
  visibility: oneOf(VISIBILITIES),
  disk_size: diskSize(),
  project_id: uuid().nullable(),
  policy: policy(),
});
const uploadBody = obj({
  key: key().required(),
  content_base64: str()
    .max(Math.ceil(MAX_OBJECT_BYTES / 3) * 4)
    .matches(/^[A-Za-z0-9+/]*={0,2}$/, '${path} must be base64')
    .required(),
  content_type: str()
    .max(255)
    .matches(/^[\w.+-]+\/[\w.+-]+(;.*)?$/, '${path} must be a media type'),
});
const renameBody = obj({ key: key().required(), new_key: key().required() });
const downloadBody = obj({ key: key().required(), expires_in: int().min(1).max(604_800) });
const objectsQuery = yup.object({
  prefix: yup.string().max(1024),
  limit: yup.number().integer().min(1).max(1000).typeError('${path} must be an integer'),
});
const deleteObjectQuery = yup.object({ key: yup.string().max(1024).required() });

type Ctx = AnyRouteContext;

/** The bucket of the caller's workspace with its region, in a project open to the caller, else 404. */
async function findBucket(ctx: Ctx, uuid: string, db: EntityManager = ctx.deps.dataSource.manager): Promise<BucketRow> {
  const row = await one<BucketRow>(db, `${BUCKET_SELECT} WHERE b.uuid = $1 AND b.workspace_uuid = $2`, [
    uuid,
    ctx.caller.workspaceUuid,
  ]);
  if (!row) throw notFound('bucket');
  await assertProjectVisible(ctx, row.project_uuid, 'bucket');
  return row;
}

function assertActive(b: BucketRow): void {
  if (b.state !== 'active') throw conflict(`the bucket is ${b.state}; objects can be changed only while it is active`);
}

async function view(ctx: Ctx, db: EntityManager, b: BucketRow, withSecret = false) {
  return (await bucketViews(db, ctx.deps, ctx.caller.workspaceUuid, [b], withSecret))[0]!;
}

export const bucketRoutes = [
  route<{}, Page, unknown>({
    method: 'get',
    path: '/buckets',
    requires: 'buckets.read',
    tag: TAG,
    paginated: true,
    summary: 'List the buckets of the workspace, newest first, with statistics (secret keys only on show)',
    response: bucketListSchema,
    async handler(ctx) {
      const visible = await visibleProjectsClause(ctx, 'b.project_uuid', 2);
      const where = `b.workspace_uuid = $1 AND ${visible.sql}`;
      const list = await selectPage<BucketRow>(ctx, {
        from: 'buckets b',
        select: BUCKET_SELECT,
        where,
        params: [ctx.caller.workspaceUuid, visible.param],
        order: 'b.created_at DESC, b.uuid DESC',
      });
      return bucketViews(ctx.deps.dataSource.manager, ctx.deps, ctx.caller.workspaceUuid, list);
    },
  }),
  route<{}, {}, yup.InferType<typeof createBody>>({
    method: 'post',
    path: '/buckets',
    requires: 'buckets.create',
    tag: TAG,
    status: 201,
    audit: 'bucket.create',
    summary: 'Create a bucket; answers it in state pending with its access key pair (provisioned by a workflow)',
    description:
      '`platform_id` is deprecated in favour of `resource_id`; a request using it is answered with a `Deprecation` header.',
    body: createBody,
    response: bucketSchema,
    async handler(ctx) {
      const b = ctx.body;
      if (b.resource_id && b.platform_id && b.resource_id !== b.platform_id) {
        throw unprocessable('resource_id and platform_id name different compute resources; send resource_id only', [
          { path: 'body.platform_id', message: 'deprecated alias of resource_id, and differs from it' },
        ]);
      }
      const resourceId = b.resource_id ?? b.platform_id;
      if (!resourceId)
        throw unprocessable('resource_id is required', [{ path: 'body.resource_id', message: 'required' }]);
      const bucket = await write(ctx, async (tx) => {
        const created = await createBucket(tx, ctx.caller, {
          ...b,
          resourceId,
          paths: { resource: b.resource_id ? 'body.resource_id' : 'body.platform_id' },
        });
        return view(ctx, tx.m, await findBucket(ctx, created.uuid, tx.m), true);
      });
      if (b.platform_id) {
        ctx.koa.set('Deprecation', PLATFORM_ID_DEPRECATED);
        ctx.koa.set('Link', '</docs#buckets>; rel="deprecation"; type="text/html"');
      }
      ctx.koa.set('Location', `/api/v1/buckets/${bucket.uuid}`);
      return bucket;
    },
  }),
  route<{ uuid: string }>({
    method: 'get',
    path: '/buckets/{uuid}',
    requires: 'buckets.read',
    tag: TAG,
    summary:
      'Show a bucket with its connection details (endpoint, access key pair) and statistics from the object store',
    response: bucketSchema,
    async handler(ctx) {
      return view(ctx, ctx.deps.dataSource.manager, await findBucket(ctx, ctx.params.uuid), true);
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof updateBody>>({
    method: 'put',
    path: '/buckets/{uuid}',
    requires: 'buckets.update',
    tag: TAG,
    audit: 'bucket.update',
    summary: "Update a bucket's settings: label, visibility, disk allocation (GiB), project, policy",
    body: updateBody,
    response: bucketSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const updated = await updateBucket(tx, ctx.caller, { ...ctx.body, uuid: ctx.params.uuid });
        return view(ctx, tx.m, await findBucket(ctx, updated.uuid, tx.m), true);
      }),
  }),
  route<{ uuid: string }>({
    method: 'delete',
    path: '/buckets/{uuid}',
    requires: 'buckets.delete',
    tag: TAG,
    status: 204,
    audit: 'bucket.delete',
    summary: 'Delete a bucket: its access key is revoked and its objects removed (data does not come back)',
    async handler(ctx) {
      await write(ctx, (tx) => deleteBucket(tx, ctx.caller, { uuid: ctx.params.uuid }));
      return undefined;
    },
  }),
  route<{ uuid: string }, { prefix?: string; limit?: number }, unknown>({
    method: 'get',
    path: '/buckets/{uuid}/objects',
    requires: 'buckets.read',
    tag: TAG,
    summary: 'List the objects of a bucket (query: prefix, limit up to 1000)',
    query: objectsQuery,
    response: yup.array(objectSchema),
    async handler(ctx) {
      const b = await findBucket(ctx, ctx.params.uuid);
      if (b.state !== 'active') return [];
      return storeCall(() =>
        storageOf(ctx.deps).listObjects(b.name, { prefix: ctx.query.prefix, limit: ctx.query.limit ?? 1000 }),
      );
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof uploadBody>>({
    method: 'post',
    path: '/buckets/{uuid}/objects',
    requires: 'buckets.objects',
    tag: TAG,
    status: 201,
    audit: 'bucket.object_upload',
    summary:
      "Upload an object (content base64-encoded, up to 700 KiB; larger objects go straight to s3_endpoint with the bucket's keys)",
    body: uploadBody,
    response: objectSchema,
    async handler(ctx) {
      const b = await findBucket(ctx, ctx.params.uuid);
      assertActive(b);
      const body = Buffer.from(ctx.body.content_base64, 'base64');
      if (body.length > MAX_OBJECT_BYTES)
        throw new Problem(413, 'objects uploaded through the API are limited to 700 KiB');
      const storage = storageOf(ctx.deps);
      const existing = await storeCall(() => storage.headObject(b.name, ctx.body.key));
      const { usageBytes } = await storeCall(() => storage.usage(b.name));
      if (usageBytes - (existing?.size ?? 0) + body.length > quotaBytes(b.disk_size_gib)) {
        throw unprocessable("the object does not fit the bucket's disk allocation; raise disk_size first", [
          { path: 'body.content_base64', message: 'exceeds quota_bytes' },
        ]);
      }
      const contentType = ctx.body.content_type ?? 'application/octet-stream';
      const stored = await storeCall(() => storage.putObject(b.name, ctx.body.key, body, contentType));
      // The object store is outside the transaction: the entry is written once the upload succeeded.
      await recordAudit(ctx.deps.dataSource.manager, ctx, {
        resourceUuid: b.uuid,
        before: null,
        after: { key: ctx.body.key, size: body.length, content_type: contentType, replaced: existing !== null },
      });
      return stored;
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof renameBody>>({
    method: 'post',
    path: '/buckets/{uuid}/objects/rename',
    requires: 'buckets.objects',
    tag: TAG,
    audit: 'bucket.object_rename',
    summary: 'Rename an object (409 when new_key is taken)',
    body: renameBody,
    response: objectSchema,
    async handler(ctx) {
      const b = await findBucket(ctx, ctx.params.uuid);
      assertActive(b);
      const storage = storageOf(ctx.deps);
      if (!(await storeCall(() => storage.headObject(b.name, ctx.body.key)))) throw notFound('object');
      if (ctx.body.new_key === ctx.body.key)
        throw unprocessable('new_key equals key', [{ path: 'body.new_key', message: 'same as key' }]);
      if (await storeCall(() => storage.headObject(b.name, ctx.body.new_key)))
        throw conflict(`an object named "${ctx.body.new_key}" already exists`);
      await storeCall(() => storage.renameObject(b.name, ctx.body.key, ctx.body.new_key));
      await recordAudit(ctx.deps.dataSource.manager, ctx, {
        resourceUuid: b.uuid,
        before: { key: ctx.body.key },
        after: { key: ctx.body.new_key },
      });
      return (await storeCall(() => storage.headObject(b.name, ctx.body.new_key)))!;
    },
  }),
  route<{ uuid: string }, { key: string }, unknown>({
    method: 'delete',
    path: '/buckets/{uuid}/objects',
    requires: 'buckets.objects',
    tag: TAG,
    status: 204,
    audit: 'bucket.object_delete',
    summary: 'Delete an object (query: key)',
    query: deleteObjectQuery,
    async handler(ctx) {
      const problem = objectKeyProblem(ctx.query.key);
      if (problem)
        throw new Problem(400, `invalid query: query.key ${problem}`, {
          errors: [{ path: 'query.key', message: problem }],
        });
      const b = await findBucket(ctx, ctx.params.uuid);
      assertActive(b);
      const storage = storageOf(ctx.deps);
      const existing = await storeCall(() => storage.headObject(b.name, ctx.query.key));
      if (!existing) throw notFound('object');
      await storeCall(() => storage.deleteObject(b.name, ctx.query.key));
      await recordAudit(ctx.deps.dataSource.manager, ctx, {
        resourceUuid: b.uuid,
        before: { key: ctx.query.key, size: existing.size },
        after: null,
      });
      return undefined;
    },
  }),
  route<{ uuid: string }, {}, yup.InferType<typeof downloadBody>>({
    method: 'post',
    path: '/buckets/{uuid}/objects/download_url',
    operationId: 'createBucketObjectDownloadUrl',
    requires: 'buckets.download_url',
    tag: TAG,
    audit: false,
    summary: 'A presigned download link for an object (expires_in seconds, default 3600, at most 7 days)',
    body: downloadBody,
    response: downloadUrlSchema,
    async handler(ctx) {
      const b = await findBucket(ctx, ctx.params.uuid);
      assertActive(b);
      const storage = storageOf(ctx.deps);
      if (!(await storeCall(() => storage.headObject(b.name, ctx.body.key)))) throw notFound('object');
      const expiresIn = ctx.body.expires_in ?? 3600;
      const url = await storeCall(() => storage.presignDownload(b.name, ctx.body.key, expiresIn));
      return { url, expires_at: new Date(Date.now() + expiresIn * 1000).toISOString() };
    },
  }),
];
