import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** A short plain-text answer of the ingress itself (never cached: it says how things stand now). */
export function sendText(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(`${body}\n`);
}

/** The same answer on a raw socket (a WebSocket upgrade the ingress refuses), then closed. */
export function refuseUpgrade(
  socket: Duplex,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  const lines = Object.entries({ 'content-type': 'text/plain; charset=utf-8', connection: 'close', ...headers })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${status === 404 ? 'Not Found' : status === 401 ? 'Unauthorized' : 'Unavailable'}\r\n${lines}\r\n${body}\n`,
  );
}
