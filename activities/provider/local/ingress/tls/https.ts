import type { IncomingMessage, ServerResponse } from 'node:http';
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { DataSource } from 'typeorm';
import { one } from '../../../../../entities/sql';
import type { IngressCertificates } from './certificates';

/** Where ACME servers fetch HTTP-01 answers (RFC 8555 8.3); never redirected. */
export const ACME_CHALLENGE_PATH = '/.well-known/acme-challenge/';

/** What the ingress's HTTPS listener needs. */
export interface IngressTls {
  /** The port it listens on (0: any free one). */
  port: number;
  /** The port clients reach it at (a redirect's Location; default: `port` as bound). */
  publicPort?: number;
  certificates: IngressCertificates;
}

/**
 * The HTTPS listener of the ingress: one TLS port, the certificate chosen by SNI
 * (`IngressCertificates`), HTTP/2 or HTTP/1.1 by ALPN. Requests and WebSocket upgrades
 * (HTTP/1.1) go to the same handlers as plain HTTP's; HTTP/2's compatibility request and
 * response stand in for Node's HTTP/1 ones. A hello for a name with no certificate fails.
 */
export function createHttpsListener(
  certificates: IngressCertificates,
  onRequest: (req: IncomingMessage, res: ServerResponse) => void,
  onUpgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void,
): { server: Http2SecureServer; close(): Promise<void> } {
  const connections = new Set<TLSSocket>();
  const server = createSecureServer({
    allowHTTP1: true,
    minVersion: 'TLSv1.2',
    SNICallback: (servername, done) => {
      certificates.context(servername).then(
        (context) => (context ? done(null, context) : done(new Error(`no certificate for ${servername}`))),
        (err: Error) => done(err),
      );
    },
  });
  server.on('request', (req, res) => onRequest(req as unknown as IncomingMessage, res as unknown as ServerResponse));
  server.on('upgrade', onUpgrade);
  // a client that gives up mid-handshake or sends garbage is no concern of the ingress
  server.on('tlsClientError', () => undefined);
  server.on('sessionError', () => undefined);
  server.on('secureConnection', (socket: TLSSocket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  return {
    server,
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of connections) socket.destroy();
      return closed;
    },
  };
}

/** The request's authority: `Host` (HTTP/1.1) or `:authority` (HTTP/2). */
export function requestAuthority(req: IncomingMessage): string | undefined {
  return req.headers.host ?? (req.headers[':authority'] as string | undefined);
}

/** The HTTP-01 key authorization the ingress serves for a token of an open ACME order, if any. */
export async function acmeAnswer(ds: DataSource, urlPath: string): Promise<string | null> {
  const token = urlPath.slice(ACME_CHALLENGE_PATH.length).split('?')[0]!;
  if (!/^[A-Za-z0-9_-]{1,256}$/.test(token)) return null;
  const row = await one<{ key_authorization: string }>(
    ds,
    'SELECT key_authorization FROM acme_challenges WHERE token = $1',
    [token],
  );
  return row?.key_authorization ?? null;
}

/** The HTTPS address of a plain HTTP request: same host and path, the HTTPS port (omitted when 443). */
export function httpsLocation(host: string, urlPath: string, httpsPort: number): string {
  const name = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `https://${name}${httpsPort === 443 ? '' : `:${httpsPort}`}${urlPath}`;
}
