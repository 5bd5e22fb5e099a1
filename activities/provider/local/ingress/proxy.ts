import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { Agent } from 'undici';

/**
 * Hop-by-hop headers (RFC 9110 7.6.1) and the ones undici sets itself: not passed on in
 * either direction. `expect` is answered by Node's server (100 Continue) before the handler runs.
 */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
]);

/** The port the client addressed: from Host, else the scheme's default (as http-proxy-3's xfwd had it). */
function hostPort(host: string | undefined, tls: boolean): string {
  const m = host ? /:(\d+)$/.exec(host) : null;
  return m ? m[1]! : tls ? '443' : '80';
}

/** The ingress is the edge: the client's own X-Forwarded-* are dropped, then set from the connection. */
function upstreamHeaders(req: IncomingMessage): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const headers = req.headers;
  // HTTP/2 (over TLS) names the host `:authority`; its pseudo-headers stay on their hop
  const host = headers.host ?? (headers[':authority'] as string | undefined);
  const tls = (req.socket as TLSSocket).encrypted === true;
  for (const name in headers) {
    if (HOP_BY_HOP.has(name) || name.startsWith('x-forwarded-') || name.startsWith(':')) continue;
    out[name] = headers[name]!;
  }
  if (host !== undefined) out.host = host;
  out['x-forwarded-for'] = req.socket.remoteAddress ?? '';
  out['x-forwarded-port'] = hostPort(host, tls);
  out['x-forwarded-proto'] = tls ? 'https' : 'http';
  if (host !== undefined) out['x-forwarded-host'] = host;
  return out;
}

function downstreamHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  for (const name of HOP_BY_HOP) if (name in headers) delete headers[name];
  return headers;
}

/**
 * The HTTP forwarding of the ingress: one undici Agent (Node's own HTTP client, keep-alive
 * pools per backend) streams a request to a backend and its answer back. No timeouts: an
 * app may stream or long-poll, as behind the proxy it replaced. WebSocket upgrades go
 * through http-proxy-3 (see ingress.ts and docs/decisions.md "Local ingress").
 */
export class Forwarder {
  private readonly agent = new Agent({ connections: 256, headersTimeout: 0, bodyTimeout: 0 });

  /** Forwards; `onError` runs when the backend does not answer (nothing sent yet: the caller answers 502). */
  forward(req: IncomingMessage, res: ServerResponse, origin: URL, onError: (err: Error) => void): void {
    const method = req.method ?? 'GET';
    // an HTTP/2 request has a body unless its headers ended the stream
    const h2 = (req as { stream?: { endAfterHeaders: boolean } }).stream;
    const hasBody =
      req.headers['content-length'] !== undefined ||
      req.headers['transfer-encoding'] !== undefined ||
      (h2 !== undefined && !h2.endAfterHeaders);
    this.agent.stream(
      { origin, path: req.url ?? '/', method, headers: upstreamHeaders(req), body: hasBody ? req : null },
      ({ statusCode, headers }) => {
        res.writeHead(statusCode, downstreamHeaders(headers));
        return res;
      },
      (err) => {
        if (!err) return;
        if (!res.headersSent && !res.destroyed) onError(err);
        else res.destroy();
      },
    );
  }

  close(): Promise<void> {
    return this.agent.destroy();
  }
}
