import type Koa from 'koa';
import type { Logger } from 'pino';
import { QueryFailedError } from 'typeorm';
import { ValidationError } from 'yup';
import { Problem, badRequest } from '../problem';

/** Turns a yup error into a 400 with one entry per failing field. */
export function validationProblem(err: ValidationError, where: string): Problem {
  const inner = err.inner.length > 0 ? err.inner : [err];
  const errors = inner.map((e) => ({
    path: e.path ? `${where}.${e.path}` : where,
    message: e.message.replace(/, but the final value was: .*$/s, ''),
  }));
  return badRequest(`invalid ${where}: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`, errors);
}

/** PostgreSQL constraint violations that escape a handler: races the database caught. */
function databaseProblem(err: QueryFailedError): Problem | null {
  const code = (err.driverError as { code?: string } | undefined)?.code;
  const constraint = (err.driverError as { constraint?: string } | undefined)?.constraint;
  if (code === '23505') return new Problem(409, `conflicts with an existing resource${constraint ? ` (${constraint})` : ''}`);
  if (code === '23P01') return new Problem(422, `overlaps an existing resource${constraint ? ` (${constraint})` : ''}`);
  if (code === '23503') return new Problem(422, 'refers to a resource that does not exist or is still in use');
  if (code === '22P02' || code === '22003' || code === '22007') return badRequest('a parameter has an invalid format');
  return null;
}

function toProblem(err: unknown): Problem | null {
  if (err instanceof Problem) return err;
  if (err instanceof ValidationError) return validationProblem(err, 'body');
  if (err instanceof QueryFailedError) return databaseProblem(err);
  const e = err as { status?: number; expose?: boolean; message?: string; type?: string };
  if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    if (e.status === 413) return new Problem(413, 'request body is larger than the 1 MB limit');
    if (e.status === 415) return new Problem(415, 'request bodies must be JSON (Content-Type: application/json)');
    if (e.type === 'entity.parse.failed' || /JSON|json/.test(e.message ?? '')) return badRequest('request body is not valid JSON');
    return new Problem(e.status, e.expose && e.message ? e.message : 'invalid request');
  }
  return null;
}

/**
 * Every error leaves as application/problem+json (RFC 9457) with the request id as
 * `instance`; unexpected errors are logged with their stack and answered 500 without one.
 */
export function problemErrors(logger: Logger): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      let problem = toProblem(err);
      if (!problem) {
        logger.error({ err, requestId: ctx.state.requestId, method: ctx.method, path: ctx.path }, 'unhandled error');
        problem = new Problem(500, 'an unexpected error occurred; quote the request id when reporting it');
      }
      ctx.status = problem.status;
      for (const [k, v] of Object.entries(problem.headers)) ctx.set(k, v);
      ctx.body = problem.body(ctx.state.requestId);
      ctx.type = 'application/problem+json';
    }
  };
}
