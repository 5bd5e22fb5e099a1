import { randomInt } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { connect, isIP } from 'node:net';

/** A resolver names are forwarded to. */
export interface Upstream {
  host: string;
  port: number;
}

/** `host`, `host:port`, `[v6]` or `[v6]:port` (the forms of dns.getServers()); port 53 by default. */
export function parseUpstream(entry: string): Upstream {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  const [host, port] = bracketed
    ? [bracketed[1], bracketed[2]]
    : isIP(entry) === 6
      ? [entry, undefined]
      : [entry.split(':')[0], entry.split(':')[1]];
  const portNumber = port === undefined ? 53 : Number(port);
  if (!isIP(host) || !Number.isInteger(portNumber) || portNumber < 1 || portNumber > 65535) {
    throw new Error(`upstream resolver "${entry}" is not ip, ip:port or [ipv6]:port`);
  }
  return { host, port: portNumber };
}

export type Transport = 'udp' | 'tcp';

/**
 * Asks the upstreams a raw query over `transport` and gives back the first valid answer
 * (its id put back to the query's), or null when none answered within `timeoutMs`. The
 * upstreams are tried in turn, the next one started when the previous has had its share of
 * the time, all still heard; each is asked with an id of its own, from a socket of its
 * own, and an answer whose id or question differs from the query's is ignored.
 */
export async function forwardQuery(
  query: Buffer,
  upstreams: readonly Upstream[],
  transport: Transport,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Buffer | null> {
  if (upstreams.length === 0 || query.length < 12 || signal?.aborted) return null;
  const done = new AbortController();
  const onAbort = () => done.abort();
  signal?.addEventListener('abort', onAbort);
  const share = timeoutMs / upstreams.length;
  const timers: NodeJS.Timeout[] = [];
  try {
    return await new Promise<Buffer | null>((resolve) => {
      done.signal.addEventListener('abort', () => resolve(null));
      timers.push(setTimeout(() => done.abort(), timeoutMs));
      upstreams.forEach((upstream, index) => {
        timers.push(
          setTimeout(() => {
            if (done.signal.aborted) return;
            const ask = transport === 'udp' ? askUdp : askTcp;
            ask(upstream, query, done.signal, (answer) => {
              resolve(answer);
              done.abort();
            });
          }, index * share),
        );
      });
    });
  } finally {
    for (const timer of timers) clearTimeout(timer);
    done.abort();
    signal?.removeEventListener('abort', onAbort);
  }
}

/** The query with a fresh id, and a check that a reply answers it (then given the query's id). */
function rekeyed(query: Buffer): { sent: Buffer; accept(reply: Buffer): Buffer | null } {
  const id = randomInt(0, 0x10000);
  const sent = Buffer.from(query);
  sent.writeUInt16BE(id, 0);
  const question = query.subarray(12, questionEnd(query));
  return {
    sent,
    accept(reply) {
      if (reply.length < 12 || reply.readUInt16BE(0) !== id || (reply[2] & 0x80) === 0) return null;
      if (!reply.subarray(12, 12 + question.length).equals(question)) return null;
      const relayed = Buffer.from(reply);
      relayed.writeUInt16BE(query.readUInt16BE(0), 0);
      return relayed;
    },
  };
}

/** Where the question section of a one-question query ends (the whole packet if it cannot tell). */
function questionEnd(query: Buffer): number {
  let offset = 12;
  while (offset < query.length && query[offset] !== 0) offset += query[offset] + 1;
  return Math.min(offset + 5, query.length);
}

function askUdp(upstream: Upstream, query: Buffer, signal: AbortSignal, answered: (reply: Buffer) => void): void {
  const { sent, accept } = rekeyed(query);
  const socket = createSocket(isIP(upstream.host) === 6 ? 'udp6' : 'udp4');
  const close = () => socket.close();
  signal.addEventListener('abort', close, { once: true });
  socket.on('error', () => {}); // unreachable upstream: the others or the timeout answer
  socket.on('message', (reply, from) => {
    if (from.address !== upstream.host || from.port !== upstream.port) return;
    const relayed = accept(reply);
    if (relayed) answered(relayed);
  });
  socket.send(sent, upstream.port, upstream.host, () => {});
}

function askTcp(upstream: Upstream, query: Buffer, signal: AbortSignal, answered: (reply: Buffer) => void): void {
  const { sent, accept } = rekeyed(query);
  const socket = connect({ host: upstream.host, port: upstream.port });
  const close = () => socket.destroy();
  signal.addEventListener('abort', close, { once: true });
  socket.on('error', () => {});
  const length = Buffer.alloc(2);
  length.writeUInt16BE(sent.length);
  socket.write(Buffer.concat([length, sent]));
  let received = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    if (received.length < 2 || received.length < 2 + received.readUInt16BE(0)) return;
    const relayed = accept(received.subarray(2, 2 + received.readUInt16BE(0)));
    socket.destroy();
    if (relayed) answered(relayed);
  });
}
