import { randomUUID } from 'node:crypto';
import type Koa from 'koa';

const VALID = /^[A-Za-z0-9._:-]{1,128}$/;

/** X-Request-Id: echoed when the client sends a sane one, generated otherwise. */
export function requestId(): Koa.Middleware {
  return async (ctx, next) => {
    const sent = ctx.get('x-request-id');
    ctx.state.requestId = VALID.test(sent) ? sent : randomUUID();
    ctx.set('X-Request-Id', ctx.state.requestId);
    await next();
  };
}
