import Router from '@koa/router';
import * as yup from 'yup';
import { isUuid } from '../domain/ids';
import { REQUIREMENTS, allows, describeRequirement } from '../domain/permissions';
import { auditCheck } from './audit';
import type { ApiDeps } from './context';
import type { EnqueuedOperation } from '../platform/outbox';
import { validationProblem } from './middleware/errors';
import { Problem, forbidden, notFound } from './problem';
import { koaPath, pathParams, type RouteDef } from './route';
import { pageQuery } from './schemas/common';

/** The query schema a route really validates: its own, plus page/per_page for lists. */
export function querySchemaOf(route: RouteDef): yup.ObjectSchema<any> | undefined {
  if (!route.paginated) return route.query;
  const base = route.query ?? yup.object({});
  return base.shape(pageQuery);
}

function hasBody(ctx: { get(h: string): string }): boolean {
  const length = ctx.get('content-length');
  return (length !== '' && length !== '0') || ctx.get('transfer-encoding') !== '';
}

async function validate<T>(schema: yup.Schema<T>, value: unknown, where: string): Promise<T> {
  try {
    return await schema.validate(value, { abortEarly: false });
  } catch (err) {
    if (err instanceof yup.ValidationError) throw validationProblem(err, where);
    throw err;
  }
}

/** Where the route table is served. */
export const API_PREFIX = '/api/v1';

/**
 * Builds the router from the route table: permission first (a caller without it learns
 * nothing about the resource or the body shape), then path, query and body validation,
 * then the handler. Unknown query parameters are refused like unknown body fields.
 */
export function buildRouter(routes: readonly RouteDef[], deps: ApiDeps): Router {
  const router = new Router({ prefix: API_PREFIX });
  for (const r of routes) {
    const requirement = REQUIREMENTS[r.requires];
    const paramNames = pathParams(r.path);
    const querySchema = querySchemaOf(r);
    const queryNames = new Set(querySchema ? Object.keys(querySchema.fields) : []);
    router[r.method](koaPath(r.path), async (ctx) => {
      const caller = ctx.state.caller!;
      if (!allows(caller, requirement)) {
        throw forbidden(`this operation needs ${describeRequirement(requirement)}`);
      }
      let params: Record<string, unknown> = {};
      if (r.params) {
        try {
          params = await r.params.validate(ctx.params, { abortEarly: true });
        } catch {
          throw notFound(r.tag.replace(/s$/, ''));
        }
      } else {
        for (const name of paramNames) {
          const value = ctx.params[name]!;
          if (!isUuid(value)) throw notFound(r.tag.replace(/s$/, ''));
          params[name] = value.toLowerCase();
        }
      }
      const unknownQuery = Object.keys(ctx.query).filter((k) => !queryNames.has(k));
      if (unknownQuery.length > 0) {
        throw new Problem(
          400,
          `unknown query parameter${unknownQuery.length > 1 ? 's' : ''}: ${unknownQuery.join(', ')}`,
          {
            errors: unknownQuery.map((k) => ({ path: `query.${k}`, message: 'unknown query parameter' })),
          },
        );
      }
      for (const [k, v] of Object.entries(ctx.query)) {
        if (Array.isArray(v))
          throw new Problem(400, `query parameter ${k} is given more than once`, {
            errors: [{ path: `query.${k}`, message: 'given more than once' }],
          });
      }
      const query = querySchema ? await validate(querySchema, { ...ctx.query }, 'query') : {};
      let body: unknown = undefined;
      if (r.body) {
        if (hasBody(ctx) && !ctx.is('application/json')) {
          throw new Problem(415, 'request bodies must be JSON (Content-Type: application/json)');
        }
        const raw = (ctx.request as unknown as { body?: unknown }).body;
        body = await validate(r.body, hasBody(ctx) ? raw : {}, 'body');
      }
      const checkAudit = await auditCheck(deps, r, ctx.state.requestId);
      const later: EnqueuedOperation[] = [];
      const result = await r.handler({
        params,
        query,
        body,
        caller,
        deps,
        koa: ctx,
        requestId: ctx.state.requestId,
        route: r,
        dispatchAfter: (op) => {
          later.push(op);
        },
      });
      if (checkAudit) await checkAudit();
      if (later.length > 0) await deps.outbox.dispatch(...later);
      ctx.status = r.status ?? 200;
      if (result !== undefined) ctx.body = result;
      if (deps.validateResponses && r.response && result !== undefined) {
        try {
          await r.response.validate(result, { strict: true, abortEarly: false });
        } catch (err) {
          const detail = err instanceof yup.ValidationError ? err.errors.join('; ') : String(err);
          throw new Error(`response of ${r.method.toUpperCase()} ${r.path} breaks its declared schema: ${detail}`);
        }
      }
    });
  }
  return router;
}
