import { spawn } from 'node:child_process';
import { PassThrough, type Readable } from 'node:stream';
import type Koa from 'koa';
import type { Logger } from 'pino';

/** The largest CGI header block accepted from `git http-backend` before its body. */
const MAX_HEADER_BYTES = 64 * 1024;

export interface CgiResponse {
  status: number;
  headers: Array<[string, string]>;
  /** The body: what followed the header block, then the rest of stdout, streamed. */
  body: Readable;
}

/** Splits `Name: value` lines of a CGI header block; `Status: 404 Not Found` sets the status. */
export function parseCgiHeaders(block: string): { status: number; headers: Array<[string, string]> } {
  let status = 200;
  const headers: Array<[string, string]> = [];
  for (const line of block.split(/\r?\n/)) {
    if (!line) continue;
    const i = line.indexOf(':');
    if (i <= 0) throw new Error(`malformed CGI header line "${line.slice(0, 100)}"`);
    const name = line.slice(0, i).trim();
    const value = line.slice(i + 1).trim();
    if (name.toLowerCase() === 'status') {
      const code = parseInt(value, 10);
      if (!(code >= 100 && code <= 599)) throw new Error(`malformed CGI status "${value}"`);
      status = code;
    } else {
      headers.push([name, value]);
    }
  }
  return { status, headers };
}

/** Where the header block ends: the index of the first byte of the body and of the separator. */
function headerEnd(buf: Buffer): { block: number; body: number } | null {
  const crlf = buf.indexOf('\r\n\r\n');
  const lf = buf.indexOf('\n\n');
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { block: crlf, body: crlf + 4 };
  if (lf >= 0) return { block: lf, body: lf + 2 };
  return null;
}

/**
 * Runs `git http-backend` (a CGI program) for one request: the request body streams into
 * its stdin, its stdout is parsed into status and headers, and the rest streams out as the
 * body (nothing is buffered beyond the header block, so packs of any size pass). `env` is
 * the whole environment of the child: the caller passes only what git needs, never Berth's
 * own. The child is killed when the client goes away.
 */
export function runHttpBackend(
  ctx: Koa.Context,
  env: NodeJS.ProcessEnv,
  logger: Logger,
  onExit?: () => void,
): Promise<CgiResponse> {
  const child = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => {
    if (stderr.length < 4096) stderr += c.toString('utf8');
  });
  child.on('close', (code, signal) => {
    if (code !== 0 || stderr.trim())
      logger.warn({ code, signal, stderr: stderr.trim().slice(0, 4096), path: env.PATH_INFO }, 'git http-backend');
    onExit?.();
  });
  ctx.req.pipe(child.stdin);
  child.stdin.on('error', () => {
    /* the backend stopped reading (it answered an error): its stdout says why */
  });
  const abort = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  };
  ctx.req.on('aborted', abort);
  ctx.res.on('close', () => {
    if (!ctx.res.writableFinished) abort();
  });

  return new Promise<CgiResponse>((resolve, reject) => {
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = headerEnd(head);
      if (!end) {
        if (head.length > MAX_HEADER_BYTES) fail(new Error('git http-backend sent no end of its CGI headers'));
        return;
      }
      child.stdout.off('data', onData);
      child.stdout.off('end', onEnd);
      let parsed: ReturnType<typeof parseCgiHeaders>;
      try {
        parsed = parseCgiHeaders(head.subarray(0, end.block).toString('latin1'));
      } catch (err) {
        fail(err as Error);
        return;
      }
      const body = new PassThrough();
      body.write(head.subarray(end.body));
      child.stdout.pipe(body);
      resolve({ ...parsed, body });
    };
    const onEnd = () =>
      fail(
        new Error(`git http-backend ended before its CGI headers${stderr ? `: ${stderr.trim().slice(0, 300)}` : ''}`),
      );
    const fail = (err: Error) => {
      child.stdout.off('data', onData);
      child.stdout.off('end', onEnd);
      abort();
      reject(err);
    };
    child.stdout.on('data', onData);
    child.stdout.on('end', onEnd);
    child.on('error', fail);
  });
}
