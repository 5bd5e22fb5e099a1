import { randomBytes } from 'node:crypto';
import * as yup from 'yup';
import { branchPatternProblem, MAX_LIFETIME_HOURS, PREVIEW_STATUSES } from '../../domain/previews';
import { PreviewConfig, PreviewEnvironment } from '../../entities/preview';
import { one } from '../../entities/sql';
import { findApp } from '../app-scope';
import { recordAudit } from '../audit';
import { write } from '../commands/audited-write';
import { destroyPreview, redeployPreview } from '../commands/previews';
import { pageOf, type Page } from '../pagination';
import { checkAssignment, checkProject, checkResource } from '../placement';
import { effectiveTarget } from '../preview-envs';
import { notFound, unprocessable } from '../problem';
import { route } from '../route';
import { arr, bool, int, obj, oneOf, str, uuid } from '../schemas/common';
import {
  defaultPreviewConfig,
  PREVIEW_CONFIG_COLUMNS,
  previewConfigSchema,
  previewConfigView,
  previewSchema,
  previewView,
  type PreviewConfigRow,
} from '../views/previews';

const TAG = 'preview_environments';

const configBody = obj({
  enabled: bool(),
  triggers: obj({
    pull_requests: bool(),
    branch_patterns: arr(
      str()
        .required()
        .test('pattern', '${path} is not a branch pattern', (v) => v === undefined || branchPatternProblem(v) === null),
    ).max(20),
  }),
  resource_id: uuid().nullable(),
  project_id: uuid().nullable(),
  use_parent_image: bool(),
  lifetime_hours: int().min(1).max(MAX_LIFETIME_HOURS).nullable(),
  rotate_webhook_secret: bool(),
});
type ConfigBody = yup.InferType<typeof configBody>;

const listQuery = obj({ status: oneOf(PREVIEW_STATUSES) });
const idParams = yup.object({ uuid: uuid().required(), id: yup.number().integer().min(1).max(2147483647).required() });

function configRecord(row: PreviewConfigRow | undefined): Record<string, unknown> | null {
  return row ? JSON.parse(JSON.stringify(row)) : null;
}

/** A code-host webhook secret: 32 random bytes, hex (GitHub takes any string). */
function newSecret(): string {
  return randomBytes(32).toString('hex');
}

export const previewRoutes = [
  route<{ uuid: string }>({
    method: 'get',
    path: '/apps/{uuid}/preview_environments/config',
    requires: 'previews.config',
    tag: TAG,
    summary:
      'Show the preview environment configuration of an app (defaults when never set); the webhook secret is never shown here',
    response: previewConfigSchema,
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      const row = await ctx.deps.dataSource.manager.findOneBy(PreviewConfig, { app_uuid: app.uuid });
      return previewConfigView(row ?? defaultPreviewConfig(app.uuid), ctx.koa.origin);
    },
  }),
  route<{ uuid: string }, {}, ConfigBody>({
    method: 'put',
    path: '/apps/{uuid}/preview_environments/config',
    requires: 'previews.config',
    tag: TAG,
    body: configBody,
    audit: 'preview_settings.update',
    summary:
      'Update the preview environment configuration (fields sent change, others stay). The code-host webhook secret is ' +
      'generated on the first update (or with rotate_webhook_secret) and shown in that response only. While enabled, a ' +
      'resource assigned to projects other than the target project is refused with 422',
    response: previewConfigSchema,
    async handler(ctx) {
      const b = ctx.body;
      return ctx.deps.dataSource.transaction(async (m) => {
        const app = await findApp(ctx, ctx.params.uuid, m, true);
        if (app.preview_parent_uuid)
          throw unprocessable("a preview environment's app cannot have preview environments of its own");
        // Raw: the audit entry records this select list (the workspace left out), before and after.
        const stored = await one<PreviewConfigRow>(
          m,
          `SELECT ${PREVIEW_CONFIG_COLUMNS} FROM preview_configs WHERE app_uuid = $1 FOR UPDATE`,
          [app.uuid],
        );
        const current = stored ?? defaultPreviewConfig(app.uuid);
        const next: PreviewConfigRow = {
          ...current,
          enabled: b.enabled ?? current.enabled,
          pull_requests: b.triggers?.pull_requests ?? current.pull_requests,
          branch_patterns: b.triggers?.branch_patterns
            ? [...new Set(b.triggers.branch_patterns)]
            : current.branch_patterns,
          resource_uuid: b.resource_id !== undefined ? b.resource_id : current.resource_uuid,
          project_uuid: b.project_id !== undefined ? b.project_id : current.project_uuid,
          use_parent_image: b.use_parent_image ?? current.use_parent_image,
          lifetime_hours: b.lifetime_hours !== undefined ? b.lifetime_hours : current.lifetime_hours,
        };
        if (next.resource_uuid && next.resource_uuid !== current.resource_uuid)
          await checkResource(ctx, m, next.resource_uuid);
        if (next.project_uuid && next.project_uuid !== current.project_uuid)
          await checkProject(ctx, m, next.project_uuid);
        if (next.enabled) {
          const target = effectiveTarget(app, next);
          await checkAssignment(
            m,
            target.resourceUuid,
            target.projectUuid,
            next.resource_uuid ? 'body.resource_id' : 'body.enabled',
          );
        }
        const secret =
          current.webhook_secret_sealed === null || b.rotate_webhook_secret === true ? newSecret() : undefined;
        const sealed = secret ? ctx.deps.secretBox.seal(secret) : current.webhook_secret_sealed;
        // raw: an upsert of every setting, updated_at = now() on the update (the builder's orUpdate sets EXCLUDED values only)
        const saved = await one<PreviewConfigRow>(
          m,
          `INSERT INTO preview_configs (app_uuid, workspace_uuid, enabled, pull_requests, branch_patterns, resource_uuid, project_uuid,
                                        use_parent_image, lifetime_hours, webhook_secret_sealed)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
           ON CONFLICT (app_uuid) DO UPDATE SET enabled = $3, pull_requests = $4, branch_patterns = $5, resource_uuid = $6,
             project_uuid = $7, use_parent_image = $8, lifetime_hours = $9, webhook_secret_sealed = $10, updated_at = now()
           RETURNING ${PREVIEW_CONFIG_COLUMNS}`,
          [
            app.uuid,
            ctx.caller.workspaceUuid,
            next.enabled,
            next.pull_requests,
            next.branch_patterns,
            next.resource_uuid,
            next.project_uuid,
            next.use_parent_image,
            next.lifetime_hours,
            sealed,
          ],
        );
        // Resource: the app whose settings these are; a new or rotated webhook secret shows as a redacted change.
        await recordAudit(m, ctx, { resourceUuid: app.uuid, before: configRecord(stored), after: configRecord(saved) });
        return previewConfigView(saved!, ctx.koa.origin, secret);
      });
    },
  }),
  route<{ uuid: string }, Page & { status?: string }>({
    method: 'get',
    path: '/apps/{uuid}/preview_environments',
    requires: 'previews.read',
    tag: TAG,
    paginated: true,
    query: listQuery,
    summary:
      'List the preview environments of an app, newest first; filter by status. They are created from pull requests and ' +
      'branch pushes only (configure triggers with the config endpoint)',
    response: yup.array(previewSchema),
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      const qb = ctx.deps.dataSource.manager
        .createQueryBuilder(PreviewEnvironment, 'p')
        .where('p.parent_app_uuid = :app', { app: app.uuid });
      if (ctx.query.status) qb.andWhere('p.status = :status', { status: ctx.query.status });
      const list = await pageOf(ctx, qb.orderBy('p.created_at', 'DESC').addOrderBy('p.id', 'DESC'));
      return list.map(previewView);
    },
  }),
  route<{ uuid: string; id: number }>({
    method: 'get',
    path: '/apps/{uuid}/preview_environments/{id}',
    requires: 'previews.read',
    tag: TAG,
    params: idParams,
    summary: 'Show a preview environment by its integer id',
    response: previewSchema,
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      const row = await ctx.deps.dataSource.manager.findOneBy(PreviewEnvironment, {
        id: ctx.params.id,
        parent_app_uuid: app.uuid,
      });
      if (!row) throw notFound('preview environment');
      return previewView(row);
    },
  }),
  route<{ uuid: string; id: number }>({
    method: 'delete',
    path: '/apps/{uuid}/preview_environments/{id}',
    requires: 'previews.delete',
    tag: TAG,
    params: idParams,
    status: 202,
    audit: 'preview.delete',
    summary:
      'Delete a preview environment: it moves to destroying, its app is removed, then it is gone (poll GET until 404)',
    response: previewSchema,
    handler: (ctx) =>
      write(ctx, async (tx) =>
        previewView(await destroyPreview(tx, ctx.caller, { appUuid: ctx.params.uuid, id: ctx.params.id })),
      ),
  }),
  route<{ uuid: string; id: number }>({
    method: 'post',
    path: '/apps/{uuid}/preview_environments/{id}/redeploy',
    requires: 'previews.redeploy',
    tag: TAG,
    params: idParams,
    audit: 'preview.redeploy',
    status: 202,
    summary: 'Redeploy the head commit of a preview environment (updating, then active or failed)',
    response: previewSchema,
    handler: (ctx) =>
      write(ctx, async (tx) =>
        previewView(await redeployPreview(tx, ctx.caller, { appUuid: ctx.params.uuid, id: ctx.params.id })),
      ),
  }),
];
