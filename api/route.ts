import type Koa from 'koa';
import type * as yup from 'yup';
import type { RequirementKey } from '../domain/permissions';
import type { ApiDeps, Caller } from './context';
import type { EnqueuedOperation } from '../platform/outbox';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface RouteContext<P = Record<string, string>, Q = Record<string, unknown>, B = unknown> {
  params: P;
  query: Q;
  body: B;
  caller: Caller;
  deps: ApiDeps;
  koa: Koa.Context;
  requestId: string;
  /** The route being served (its declared audit action names the request's audit entry). */
  route: RouteDef;
  /** Starts an operation the handler enqueued once the handler has returned (its transaction committed). */
  dispatchAfter(operation: EnqueuedOperation): void;
}

/** A context from any route, for helpers that use only the caller, the deps and the request (not params, query or body). */
export type AnyRouteContext = RouteContext<unknown, unknown, unknown>;

/**
 * The context a command is called with from an endpoint outside the route table (the git
 * endpoint, the code-host receiver): the same caller, deps and request, under the declaration
 * of the route whose audit action it records. Such callers run commands that commit and
 * dispatch on their own, so an operation left for later is dispatched at once.
 */
export function outsideRouteContext<P>(
  fields: Omit<RouteContext<P, {}, {}>, 'query' | 'body' | 'dispatchAfter'>,
): RouteContext<P, {}, {}> {
  return { ...fields, query: {}, body: {}, dispatchAfter: (op) => void fields.deps.outbox.dispatch(op) };
}

/**
 * One declaration per route: the router, the OpenAPI document, the permission-matrix test
 * and the fuzz test are all derived from these.
 */
export interface RouteDef<P = any, Q = any, B = any> {
  method: Method;
  /** Path under /api/v1 with {param} placeholders, e.g. /projects/{uuid}. */
  path: string;
  /** What the caller must hold: a key of the requirement table (domain/permissions REQUIREMENTS). */
  requires: RequirementKey;
  summary: string;
  tag: string;
  /**
   * The OpenAPI operationId, only where the derived one (api/openapi-names.ts) reads wrong:
   * the path ends in a word that is neither a collection nor a verb (`state`, `public_access`).
   */
  operationId?: string;
  /** Path parameter schema; by default every parameter is a UUID. */
  params?: yup.ObjectSchema<any>;
  query?: yup.ObjectSchema<any>;
  body?: yup.Schema<any>;
  /** Success status (default 200). */
  status?: number;
  /** Declared response body: documents the route and, in tests, is checked against every response. */
  response?: yup.Schema<any>;
  /** Lists: page/per_page query, Link and X-Total-Count headers. */
  paginated?: boolean;
  /**
   * Every POST, PUT, PATCH and DELETE declares it: the audit action (`<resource type>.<verb>`,
   * e.g. `bucket.create`) its handler records, exactly once, in the transaction of its change
   * (`recordAudit`); or `false` for a request that changes nothing (a check, a signed link).
   */
  audit?: string | false;
  /** Marks a deprecated request field or route for the reference. */
  description?: string;
  handler(ctx: RouteContext<P, Q, B>): Promise<unknown>;
}

export function route<P = Record<string, string>, Q = Record<string, unknown>, B = unknown>(
  def: RouteDef<P, Q, B>,
): RouteDef<P, Q, B> {
  return def;
}

/** `/projects/{uuid}` -> `/projects/:uuid` */
export function koaPath(path: string): string {
  return path.replace(/\{([A-Za-z_]+)\}/g, ':$1');
}

export function pathParams(path: string): string[] {
  return [...path.matchAll(/\{([A-Za-z_]+)\}/g)].map((m) => m[1]!);
}
