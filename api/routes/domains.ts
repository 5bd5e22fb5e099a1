import * as yup from 'yup';
import { CustomDomain } from '../../entities/domain';
import { findApp } from '../app-scope';
import { write } from '../commands/audited-write';
import { createDomain, deleteDomain, findDomain, renameDomain, verifyDomain } from '../commands/domains';
import { pageOf, type Page } from '../pagination';
import { route } from '../route';
import { obj, str } from '../schemas/common';
import { domainSchema, domainViews } from '../views/domains';

const TAG = 'domains';

const domainBody = obj({
  domain: obj({ name: str().min(1).max(253).required() }).required(),
});
type DomainBody = yup.InferType<typeof domainBody>;

export const domainRoutes = [
  route<{ uuid: string }, Page>({
    method: 'get',
    path: '/apps/{uuid}/domains',
    requires: 'domains.read',
    tag: TAG,
    paginated: true,
    summary: 'List the custom domains of an app, newest first',
    response: yup.array(domainSchema),
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      const list = await pageOf(
        ctx,
        ctx.deps.dataSource.manager
          .createQueryBuilder(CustomDomain, 'd')
          .where('d.app_uuid = :app', { app: app.uuid })
          .orderBy('d.created_at', 'DESC')
          .addOrderBy('d.uuid', 'DESC'),
      );
      return domainViews(ctx.deps.dataSource.manager, list);
    },
  }),
  route<{ uuid: string }, {}, DomainBody>({
    method: 'post',
    path: '/apps/{uuid}/domains',
    requires: 'apps.domains',
    tag: TAG,
    status: 201,
    body: domainBody,
    audit: 'domain.create',
    summary:
      'Add a custom domain (pending, with a verification_token to publish as TXT at _platformapp-verify.<domain>)',
    response: domainSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const domain = await createDomain(tx, ctx.caller, {
          appUuid: ctx.params.uuid,
          name: ctx.body.domain.name.trim().toLowerCase(),
        });
        ctx.koa.set('Location', `/api/v1/apps/${domain.app_uuid}/domains/${domain.uuid}`);
        return (await domainViews(tx.m, [domain]))[0]!;
      }),
  }),
  route<{ uuid: string; domain_uuid: string }>({
    method: 'get',
    path: '/apps/{uuid}/domains/{domain_uuid}',
    requires: 'domains.read',
    tag: TAG,
    summary: 'Show a custom domain (poll it while verification is in progress)',
    response: domainSchema,
    async handler(ctx) {
      const app = await findApp(ctx, ctx.params.uuid);
      const m = ctx.deps.dataSource.manager;
      return (await domainViews(m, [await findDomain(app, ctx.params.domain_uuid, m)]))[0]!;
    },
  }),
  route<{ uuid: string; domain_uuid: string }, {}, DomainBody>({
    method: 'put',
    path: '/apps/{uuid}/domains/{domain_uuid}',
    requires: 'apps.domains',
    tag: TAG,
    body: domainBody,
    audit: 'domain.update',
    summary: 'Rename a custom domain; a new name needs verifying again (409 while a check is in progress)',
    response: domainSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const domain = await renameDomain(tx, ctx.caller, {
          appUuid: ctx.params.uuid,
          domainUuid: ctx.params.domain_uuid,
          name: ctx.body.domain.name.trim().toLowerCase(),
        });
        return (await domainViews(tx.m, [domain]))[0]!;
      }),
  }),
  route<{ uuid: string; domain_uuid: string }>({
    method: 'delete',
    path: '/apps/{uuid}/domains/{domain_uuid}',
    requires: 'apps.domains',
    tag: TAG,
    status: 204,
    audit: 'domain.delete',
    summary: 'Remove a custom domain (a verification in progress stops at its next check)',
    handler: (ctx) =>
      write(ctx, (tx) =>
        deleteDomain(tx, ctx.caller, { appUuid: ctx.params.uuid, domainUuid: ctx.params.domain_uuid }),
      ),
  }),
  route<{ uuid: string; domain_uuid: string }>({
    method: 'post',
    path: '/apps/{uuid}/domains/{domain_uuid}/verify',
    requires: 'apps.domains',
    tag: TAG,
    audit: 'domain.verify',
    summary:
      'Re-run DNS verification (no body): pending or failed moves to in_progress and is checked asynchronously; ' +
      'a verified domain, or one that needs no verification, is returned unchanged and nothing is scheduled',
    response: domainSchema,
    handler: (ctx) =>
      write(ctx, async (tx) => {
        const domain = await verifyDomain(tx, ctx.caller, {
          appUuid: ctx.params.uuid,
          domainUuid: ctx.params.domain_uuid,
        });
        return (await domainViews(tx.m, [domain]))[0]!;
      }),
  }),
];
