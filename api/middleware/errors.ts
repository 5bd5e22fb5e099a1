import type Koa from 'koa';
import type { Logger } from 'pino';
import { QueryFailedError } from 'typeorm';
import { ValidationError } from 'yup';
import { Problem, badRequest, unavailable } from '../problem';

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
  if (code === '23505')
    return new Problem(409, `conflicts with an existing resource${constraint ? ` (${constraint})` : ''}`);
  if (code === '23P01') return new Problem(422, `overlaps an existing resource${constraint ? ` (${constraint})` : ''}`);
  if (code === '23503') return new Problem(422, 'refers to a resource that does not exist or is still in use');
  if (code === '22P02' || code === '22003' || code === '22007') return badRequest('a parameter has an invalid format');
  return null;
}

/** Seconds a client is asked to wait while the database is unreachable. */
export const DATABASE_RETRY_AFTER_S = 5;
const CONNECTION_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);
/** SQLSTATE classes 08 (connection exception) and 57P (operator intervention: shutdown, starting up), 53300 too many connections. */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[1-3]|53300)$/;
const CONNECTION_MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|terminating connection)/;

/**
 * PostgreSQL unreachable (down, restarting, the pool cannot connect in time, a connection
 * cut mid-query): a transient condition, answered 503 with Retry-After rather than 500.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = (err instanceof QueryFailedError ? err.driverError : err) as {
    code?: unknown;
    message?: unknown;
    cause?: unknown;
  } | null;
  if (!e || typeof e !== 'object') return false;
  if (typeof e.code === 'string' && (CONNECTION_ERRNOS.has(e.code) || UNAVAILABLE_SQLSTATE.test(e.code))) return true;
  if (typeof e.message === 'string' && CONNECTION_MESSAGES.test(e.message)) return true;
  return e.cause !== undefined && e.cause !== err && isDatabaseUnavailable(e.cause);
}

function toProblem(err: unknown): Problem | null {
  if (err instanceof Problem) return err;
  if (isDatabaseUnavailable(err))
    return unavailable('the database is unreachable for a moment; retry after the given delay', DATABASE_RETRY_AFTER_S);
  if (err instanceof ValidationError) return validationProblem(err, 'body');
  if (err instanceof QueryFailedError) return databaseProblem(err);
  const e = err as { status?: number; expose?: boolean; message?: string; type?: string };
  if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    if (e.status === 413) return new Problem(413, 'request body is larger than the 1 MB limit');
    if (e.status === 415) return new Problem(415, 'request bodies must be JSON (Content-Type: application/json)');
    if (e.type === 'entity.parse.failed' || /JSON|json/.test(e.message ?? ''))
      return badRequest('request body is not valid JSON');
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
      if (problem?.status === 503 && isDatabaseUnavailable(err)) {
        logger.warn(
          { requestId: ctx.state.requestId, method: ctx.method, path: ctx.path, code: (err as { code?: string }).code },
          'database unreachable',
        );
      }
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
