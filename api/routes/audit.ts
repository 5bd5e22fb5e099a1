import * as yup from 'yup';
import { AuditEvent } from '../../entities/audit-event';
import { rows, one } from '../../entities/sql';
import { assertProjectVisible } from '../access';
import { offsetOf, pageOf, setPageHeaders, type Page } from '../pagination';
import { notFound, badRequest } from '../problem';
import { route } from '../route';
import { obj, str, timestamp, uuid } from '../schemas/common';
import { activityListSchema, auditEventSchema, auditEventView } from '../views/audit';
import { iso } from '../views/common';

const auditQuery = obj({
  resource_uuid: uuid(),
  actor: uuid(),
  action: str().max(200),
  since: timestamp().test(
    'iso',
    '${path} must be an ISO 8601 date-time',
    (v) => v === undefined || !Number.isNaN(Date.parse(v)),
  ),
  until: timestamp().test(
    'iso',
    '${path} must be an ISO 8601 date-time',
    (v) => v === undefined || !Number.isNaN(Date.parse(v)),
  ),
});

type AuditQuery = yup.InferType<typeof auditQuery> & Page;

export const auditRoutes = [
  route<{}, AuditQuery, unknown>({
    method: 'get',
    path: '/audit_events',
    requires: 'audit.read',
    tag: 'audit',
    paginated: true,
    query: auditQuery,
    summary:
      "The workspace's audit log, newest first (owner and admins): every accepted change with its actor, diff and origin",
    response: yup.array(auditEventSchema),
    async handler(ctx) {
      const q = ctx.query;
      if (q.since && q.until && Date.parse(q.since) > Date.parse(q.until))
        throw badRequest('since must not be after until');
      const qb = ctx.deps.dataSource.manager
        .createQueryBuilder(AuditEvent, 'e')
        .where('e.workspace_uuid = :workspace', { workspace: ctx.caller.workspaceUuid });
      if (q.resource_uuid) qb.andWhere('e.resource_uuid = :resource', { resource: q.resource_uuid });
      if (q.actor) qb.andWhere('e.actor_uuid = :actor', { actor: q.actor });
      if (q.action) qb.andWhere('e.action = :action', { action: q.action });
      if (q.since) qb.andWhere('e.created_at >= CAST(:since AS timestamptz)', { since: q.since });
      if (q.until) qb.andWhere('e.created_at <= CAST(:until AS timestamptz)', { until: q.until });
      const list = await pageOf(ctx, qb.orderBy('e.created_at', 'DESC').addOrderBy('e.uuid', 'DESC'));
      return list.map(auditEventView);
    },
  }),
  route<{ uuid: string }, Page, unknown>({
    method: 'get',
    path: '/apps/{uuid}/activity',
    requires: 'apps.activity',
    tag: 'apps',
    paginated: true,
    summary:
      "An app's activity: changes from the audit log to the app and to what it owns (deployments, add-ons, cron jobs, domains, certificates, variables, previews) and its platform events (deployments, state changes, health), newest first",
    response: activityListSchema,
    async handler(ctx) {
      const app = await one<{ uuid: string; project_uuid: string | null }>(
        ctx.deps.dataSource,
        `SELECT uuid, project_uuid FROM apps WHERE uuid = $1 AND workspace_uuid = $2`,
        [ctx.params.uuid, ctx.caller.workspaceUuid],
      );
      if (!app) throw notFound('app');
      await assertProjectVisible(ctx, app.project_uuid, 'app');
      // Raw: the feed is a UNION of two tables (changes and events), which the query builder cannot say.
      const feed = `
        SELECT 'change' AS kind, uuid, action AS type, created_at, source, actor_type, actor_uuid, resource_type, resource_uuid, diff, NULL::jsonb AS data
          FROM audit_events WHERE workspace_uuid = $1 AND (app_uuid = $2 OR resource_uuid = $2)
        UNION ALL
        SELECT 'event', uuid, type, created_at, NULL, NULL, NULL, NULL, NULL, NULL, payload->'data'
          FROM events WHERE workspace_uuid = $1 AND app_uuid = $2`;
      const params = [ctx.caller.workspaceUuid, app.uuid];
      const total = await one<{ n: number }>(ctx.deps.dataSource, `SELECT count(*)::int AS n FROM (${feed}) f`, params);
      const list = await rows(ctx.deps.dataSource, `${feed} ORDER BY created_at DESC, uuid DESC LIMIT $3 OFFSET $4`, [
        ...params,
        ctx.query.per_page,
        offsetOf(ctx.query),
      ]);
      setPageHeaders(ctx.koa, ctx.query, total!.n);
      return list.map((r) => ({
        kind: r.kind as 'change' | 'event',
        uuid: r.uuid,
        type: r.type,
        created_at: iso(r.created_at)!,
        source: r.source,
        actor: r.kind === 'change' ? { type: r.actor_type, uuid: r.actor_uuid } : null,
        resource_type: r.resource_type,
        resource_uuid: r.resource_uuid,
        diff: r.diff,
        data: r.data,
      }));
    },
  }),
];
