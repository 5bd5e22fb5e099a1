import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import Koa from 'koa';
import { version } from '../package.json';
import { codeHostRouter } from './code-host';
import type { ApiDeps } from './context';
import { gitHttp } from './git-http';
import { accessLog } from './middleware/access-log';
import { authenticate } from './middleware/auth';
import { problemErrors } from './middleware/errors';
import { idempotency } from './middleware/idempotency';
import { appAddressKey, createRequestLimiter, rateLimit, tokenOrAddressKey } from './middleware/rate-limit';
import { requestId } from './middleware/request-id';
import { openApiDocument, referencePage } from './openapi';
import { Problem } from './problem';
import type { RouteDef } from './route';
import { onlyItsShapes, routeDispatch } from './route-dispatch';
import { routes as allRoutes } from './routes';

export const BODY_LIMIT = '1mb';
/** The methods whose request body is read. */
const BODY_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'];

/** The Koa app, without listen: bin/ serves it, tests call it in process. */
export function createApp(deps: ApiDeps, routes: readonly RouteDef[] = allRoutes): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;
  app.on('error', (err, ctx) => {
    deps.logger.error({ err, requestId: ctx?.state?.requestId }, 'response error');
  });

  const meta = new Router();
  const document = openApiDocument(routes, version);
  const page = referencePage(routes, version);
  meta.get('/api/v1/openapi.json', (ctx) => {
    ctx.body = document;
  });
  meta.get('/docs', (ctx) => {
    ctx.type = 'text/html';
    ctx.body = page;
  });
  meta.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });

  const api = routeDispatch(routes, deps);

  app.use(requestId());
  app.use(problemErrors(deps.logger));
  app.use(accessLog(deps.logger));
  app.use(async (ctx, next) => {
    await next();
    if (ctx.body != null) return;
    if (ctx.status === 404) throw new Problem(404, `no route for ${ctx.method} ${ctx.path}`);
    if (ctx.status === 405 || ctx.status === 501) {
      throw new Problem(405, `${ctx.method} is not allowed on ${ctx.path}; allowed: ${ctx.response.get('Allow')}`, {
        headers: { Allow: ctx.response.get('Allow') },
      });
    }
  });
  app.use(onlyItsShapes(meta));
  const limiter = createRequestLimiter(deps.config.rateLimit);
  // git's Smart HTTP for git_push apps (HTTP Basic with a token, not bearer): /git/<app name>.git (api/git-http.ts),
  // limited per app and client address like the code-host endpoint.
  if (deps.localLayout) {
    const limitGit = rateLimit(limiter, (ctx) => appAddressKey(/^\/git\/([^/]+)/.exec(ctx.path)?.[1] ?? '', ctx));
    const git = gitHttp({ ...deps, localLayout: deps.localLayout });
    app.use((ctx, next) => (ctx.path.startsWith('/git/') ? limitGit(ctx, () => git(ctx, next)) : next()));
  }
  app.use(async (ctx, next) => {
    if (ctx.path === '/api/v1' || ctx.path.startsWith('/api/v1/')) return next();
    ctx.status = 404;
  });
  // Signed by the code host, not bearer-authenticated: before authentication (api/code-host.ts).
  app.use(onlyItsShapes(codeHostRouter(deps, limiter)));
  app.use(rateLimit(limiter, tokenOrAddressKey));
  app.use(authenticate(deps.dataSource, deps.tokenCache));
  const parseBody = bodyParser({
    enableTypes: ['json'],
    jsonLimit: BODY_LIMIT,
    encoding: 'utf-8',
    parsedMethods: BODY_METHODS,
    onError: (err: Error & { status?: number }) => {
      if (err.status === 413 || /too large/i.test(err.message))
        throw new Problem(413, `request body is larger than the ${BODY_LIMIT} limit`);
      throw new Problem(400, 'request body is not valid JSON');
    },
  });
  const idempotent = idempotency(deps.dataSource, deps.secretBox);
  // Both concern requests with a body only (Idempotency-Key is read on POST): a GET passes by them.
  app.use((ctx, next) =>
    BODY_METHODS.includes(ctx.method.toUpperCase()) ? parseBody(ctx, () => idempotent(ctx, next)) : next(),
  );
  app.use(api.middleware);
  app.use(async (ctx) => {
    ctx.status = 404;
  });
  return app;
}
