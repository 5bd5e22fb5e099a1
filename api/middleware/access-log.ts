import type Koa from 'koa';
import type { Logger } from 'pino';

/** One line per request at `info` (nothing is measured below that level); never the Authorization header or a body. */
export function accessLog(logger: Logger): Koa.Middleware {
  return async (ctx, next) => {
    if (!logger.isLevelEnabled('info')) return next();
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      logger.info(
        {
          requestId: ctx.state.requestId,
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          ms: Math.round(ms * 10) / 10,
          workspace: ctx.state.caller?.workspaceUuid,
          token: ctx.state.caller?.tokenUuid,
        },
        'request',
      );
    }
  };
}
