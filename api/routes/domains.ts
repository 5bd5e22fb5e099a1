import { randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import * as yup from 'yup';
import { dnsTargetOf, domainNameProblem, isUnder, wwwRoot } from '../../domain/domains';
import { columnsOf } from '../../entities/columns';
import { CustomDomain } from '../../entities/domain';
import { one } from '../../entities/sql';
import { findApp, type AppScope } from '../app-scope';
import { recordAudit, snapshot } from '../audit';
import { pageOf, type Page } from '../pagination';
import { conflict, notFound, unprocessable } from '../problem';
import { route, type AnyRouteContext } from '../route';
import { obj, str } from '../schemas/common';
import { domainSchema, domainView } from '../views/domains';

const TAG = 'domains';

const domainBody = obj({
  domain: obj({ name: str().min(1).max(253).required() }).required(),
});
type DomainBody = yup.InferType<typeof domainBody>;

type Ctx = AnyRouteContext;

/** A fresh verification token: 24 random bytes, base64url (published as a TXT record). */
function newToken(): string {
  return `berth-verify=${randomBytes(24).toString('base64url')}`;
}

async function findDomain(app: AppScope, domainUuid: string, m: EntityManager, lock = false): Promise<CustomDomain> {
  const row = await m.findOne(CustomDomain, {
    where: { uuid: domainUuid, app_uuid: app.uuid },
    ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}),
  });
  if (!row) throw notFound('domain');
  return row;
}

/** Refuses malformed names and the platform's own domains (422), and names taken (409). */
async function checkName(m: EntityManager, name: string, except?: string): Promise<void> {
  const problem = domainNameProblem(name);
  if (problem)
    throw unprocessable(`"${name}" is not a valid domain name: ${problem}`, [
      { path: 'body.domain.name', message: problem },
    ]);
  const platform: Array<{ domain: string }> = await m.query(`SELECT domain FROM regions`);
  const under = platform.find((r) => isUnder(name, r.domain));
  if (under) {
    throw unprocessable(`"${name}" is under the platform domain ${under.domain}; apps get those names automatically`, [
      { path: 'body.domain.name', message: 'platform domains are not custom domains' },
    ]);
  }
  const taken = await one(m, `SELECT 1 FROM domains WHERE name = $1 AND uuid IS DISTINCT FROM $2`, [
    name,
    except ?? null,
  ]);
  if (taken) throw conflict(`the domain ${name} is already in use`);
}

/**
 * What a new (or renamed) domain starts as. A www subdomain whose root is verified in the
 * same workspace needs no verification: it is verified at once, pointing at its own app.
 */
async function initialState(
  ctx: Ctx,
  m: EntityManager,
  app: AppScope,
  name: string,
): Promise<{ status: string; token: string | null; target: string | null }> {
  const root = wwwRoot(name);
  if (root) {
    const verifiedRoot = await one(
      m,
      `SELECT 1 FROM domains WHERE name = $1 AND workspace_uuid = $2 AND verification_status = 'verified'`,
      [root, ctx.caller.workspaceUuid],
    );
    if (verifiedRoot) {
      const region = await one<{ domain: string }>(
        m,
        `SELECT r.domain FROM compute_resources c JOIN regions r ON r.id = c.region_id WHERE c.uuid = $1`,
        [app.resource_uuid],
      );
      return { status: 'verified', token: null, target: dnsTargetOf(app.name, region!.domain) };
    }
  }
  return { status: 'pending', token: newToken(), target: null };
}

function uniqueViolation(err: unknown, name: string): never {
  if ((err as { code?: string }).code === '23505') throw conflict(`the domain ${name} is already in use`);
  throw err;
}

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
      return list.map(domainView);
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
    async handler(ctx) {
      const name = ctx.body.domain.name.trim().toLowerCase();
      return ctx.deps.dataSource.transaction(async (m) => {
        const app = await findApp(ctx, ctx.params.uuid, m);
        await checkName(m, name);
        const start = await initialState(ctx, m, app, name);
        const uuid = randomUUID();
        const row = await one<CustomDomain>(
          m,
          `INSERT INTO domains (uuid, workspace_uuid, app_uuid, name, verification_status, verification_token, dns_target)
           VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${columnsOf(CustomDomain)}`,
          [uuid, ctx.caller.workspaceUuid, app.uuid, name, start.status, start.token, start.target],
        ).catch((e) => uniqueViolation(e, name));
        await recordAudit(m, ctx, { resourceUuid: uuid, before: null, after: await snapshot(m, 'domains', uuid) });
        ctx.koa.set('Location', `/api/v1/apps/${app.uuid}/domains/${uuid}`);
        return domainView(row!);
      });
    },
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
      return domainView(await findDomain(app, ctx.params.domain_uuid, ctx.deps.dataSource.manager));
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
    async handler(ctx) {
      const name = ctx.body.domain.name.trim().toLowerCase();
      return ctx.deps.dataSource.transaction(async (m) => {
        const app = await findApp(ctx, ctx.params.uuid, m);
        const domain = await findDomain(app, ctx.params.domain_uuid, m, true);
        const before = await snapshot(m, 'domains', domain.uuid);
        if (domain.name === name) {
          await recordAudit(m, ctx, { resourceUuid: domain.uuid, before, after: before });
          return domainView(domain);
        }
        if (domain.verification_status === 'in_progress') {
          throw conflict(
            'verification of this domain is in progress; wait for it to finish (or delete the domain) before renaming it',
          );
        }
        await checkName(m, name, domain.uuid);
        const start = await initialState(ctx, m, app, name);
        const row = await one<CustomDomain>(
          m,
          `UPDATE domains SET name = $2, verification_status = $3, verification_token = $4, dns_target = $5,
                  check_attempts = 0, last_check_error = NULL, last_checked_at = NULL, updated_at = now()
            WHERE uuid = $1 RETURNING ${columnsOf(CustomDomain)}`,
          [domain.uuid, name, start.status, start.token, start.target],
        ).catch((e) => uniqueViolation(e, name));
        await recordAudit(m, ctx, {
          resourceUuid: domain.uuid,
          before,
          after: await snapshot(m, 'domains', domain.uuid),
        });
        return domainView(row!);
      });
    },
  }),
  route<{ uuid: string; domain_uuid: string }>({
    method: 'delete',
    path: '/apps/{uuid}/domains/{domain_uuid}',
    requires: 'apps.domains',
    tag: TAG,
    status: 204,
    audit: 'domain.delete',
    summary: 'Remove a custom domain (a verification in progress stops at its next check)',
    async handler(ctx) {
      return ctx.deps.dataSource.transaction(async (m) => {
        const app = await findApp(ctx, ctx.params.uuid, m);
        const domain = await findDomain(app, ctx.params.domain_uuid, m, true);
        const before = await snapshot(m, 'domains', domain.uuid);
        await m.query(`DELETE FROM domains WHERE uuid = $1`, [domain.uuid]);
        await recordAudit(m, ctx, { resourceUuid: domain.uuid, before, after: null });
        return undefined;
      });
    },
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
    async handler(ctx) {
      const { domain, operation } = await ctx.deps.dataSource.transaction(async (m) => {
        const app = await findApp(ctx, ctx.params.uuid, m);
        const found = await findDomain(app, ctx.params.domain_uuid, m, true);
        const before = await snapshot(m, 'domains', found.uuid);
        // It writes the row and starts a verification workflow, so it is a change; an accepted
        // request that finds nothing to check still records its (empty) entry.
        if (found.verification_status !== 'pending' && found.verification_status !== 'failed') {
          await recordAudit(m, ctx, { resourceUuid: found.uuid, before, after: before });
          return { domain: found, operation: null };
        }
        const updated = await one<CustomDomain>(
          m,
          `UPDATE domains SET verification_status = 'in_progress', check_attempts = 0, last_check_error = NULL, updated_at = now()
            WHERE uuid = $1 AND verification_status IN ('pending', 'failed') RETURNING ${columnsOf(CustomDomain)}`,
          [found.uuid],
        );
        const op = await ctx.deps.outbox.enqueue(m, {
          operation: 'domain-verify',
          workflow: 'domainVerify',
          workspaceUuid: ctx.caller.workspaceUuid,
          resourceUuid: found.uuid,
          args: [{ domainUuid: found.uuid }],
        });
        await recordAudit(m, ctx, {
          resourceUuid: found.uuid,
          before,
          after: await snapshot(m, 'domains', found.uuid),
        });
        return { domain: updated!, operation: op };
      });
      if (operation) await ctx.deps.outbox.dispatch(operation);
      return domainView(domain);
    },
  }),
];
