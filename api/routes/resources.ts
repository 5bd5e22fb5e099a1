import * as yup from 'yup';
import { rows } from '../../entities/sql';
import { offsetOf, setPageHeaders, type Page } from '../pagination';
import { notFound } from '../problem';
import { route } from '../route';
import { loadResources, regionSchema, resourceSchema } from '../views/resources';

export const resourceRoutes = [
  route<{}, {}, unknown>({
    method: 'get',
    path: '/regions',
    requires: 'resources.read',
    tag: 'regions',
    summary: 'List the regions compute resources run in',
    response: yup.array(regionSchema),
    async handler(ctx) {
      return rows(ctx.deps.dataSource, `SELECT id, name, code FROM regions ORDER BY id`);
    },
  }),
  route<{}, Page, unknown>({
    method: 'get',
    path: '/resources',
    requires: 'resources.read',
    tag: 'resources',
    paginated: true,
    summary: 'List the compute resources of the workspace with their capacity',
    response: yup.array(resourceSchema),
    async handler(ctx) {
      const all = await loadResources(ctx.deps.dataSource.manager, ctx.caller.workspaceUuid);
      setPageHeaders(ctx.koa, ctx.query, all.length);
      return all.slice(offsetOf(ctx.query), offsetOf(ctx.query) + ctx.query.per_page);
    },
  }),
  route<{ uuid: string }>({
    method: 'get',
    path: '/resources/{uuid}',
    requires: 'resources.read',
    tag: 'resources',
    summary: 'Show a compute resource',
    response: resourceSchema,
    async handler(ctx) {
      const [found] = await loadResources(ctx.deps.dataSource.manager, ctx.caller.workspaceUuid, [ctx.params.uuid]);
      if (!found) throw notFound('compute resource');
      return found;
    },
  }),
];
