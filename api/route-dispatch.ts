import Router, { type RouterMiddleware } from '@koa/router';
import type { ApiDeps } from './context';
import type { RouteDef } from './route';
import { API_PREFIX, buildRouter } from './router';

/**
 * A path's shape: its first segment (lower case) and its number of segments, e.g. `apps/2`
 * for `/apps/{uuid}` and `/apps/0a1b...` (one trailing slash ignored). Every route's
 * regular expression (case-insensitive, one optional trailing slash, a parameter is one
 * non-empty segment) matches only paths of its own shape, so the shape picks the only
 * routes worth trying.
 */
export function pathShape(path: string): string {
  const rest = path.endsWith('/') ? path.slice(0, -1) : path;
  let segments = 0;
  for (let i = 0; i < rest.length; i++) if (rest.charCodeAt(i) === 47 /* '/' */) segments++;
  const end = rest.indexOf('/', 1);
  return `${(end === -1 ? rest.slice(1) : rest.slice(1, end)).toLowerCase()}/${segments}`;
}

/**
 * `router` run only for a path of one of its routes' shapes; any other path passes by it
 * untouched, as no route of it could match (the API's own routers run after these).
 */
export function onlyItsShapes(router: Router): RouterMiddleware {
  const shapes = new Set(
    router.stack.map((layer) => {
      const path = String(layer.path);
      if (!/^(\/[\w.-]+)+$/.test(path.replace(/\/:\w+/g, '/x')) || path.startsWith('/:'))
        throw new Error(`${path}: only literal first segments and whole-segment parameters have a shape`);
      return pathShape(path);
    }),
  );
  const routes = router.routes();
  return (ctx, next) => (shapes.has(pathShape(ctx.path)) ? routes(ctx, next) : next());
}

function served(router: Router): RouterMiddleware {
  const routes = router.routes();
  const allowed = router.allowedMethods({ throw: false });
  return (ctx, next) => routes(ctx, () => allowed(ctx, next));
}

export interface RouteDispatch {
  middleware: RouterMiddleware;
  /** The routers, one per path shape (what the OpenAPI test compares with the document). */
  routers: Router[];
}

/**
 * The route table served by @koa/router, one Router per path shape (`pathShape`): a
 * request is matched against the few routes of its shape instead of every route's regular
 * expression in turn (docs/performance.md). A path no route has the shape of goes through an
 * empty Router, so a 405/501 for it (methods of what the routers before it matched, e.g.
 * the OpenAPI document's) is answered as by one Router holding every route.
 */
export function routeDispatch(routes: readonly RouteDef[], deps: ApiDeps): RouteDispatch {
  const byShape = new Map<string, RouteDef[]>();
  for (const r of routes) {
    if (r.path.startsWith('/{')) throw new Error(`${r.method} ${r.path}: a route's first segment must be literal`);
    const shape = pathShape(r.path);
    byShape.set(shape, [...(byShape.get(shape) ?? []), r]);
  }
  const routers = [...byShape.values()].map((group) => buildRouter(group, deps));
  const shapes = new Map([...byShape.keys()].map((shape, i) => [shape, served(routers[i]!)]));
  const none = served(new Router({ prefix: API_PREFIX }));
  return {
    routers,
    middleware: (ctx, next) =>
      (shapes.get(pathShape(ctx.path.slice(API_PREFIX.length))) ?? none)(ctx, next) as Promise<void>,
  };
}
