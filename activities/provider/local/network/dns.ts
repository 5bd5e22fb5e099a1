import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { getServers } from 'node:dns';
import { createServer, isIP, isIPv4, type Server, type Socket } from 'node:net';
import * as dnsPacket from 'dns-packet';
import type { Logger } from 'pino';
import { forwardQuery, parseUpstream, type Transport, type Upstream } from './dns-upstream';

/** Seconds a client may keep an internal answer: replicas come and go. */
export const INTERNAL_TTL_SECONDS = 5;
/** The suffix of names that are only ever answered here (never forwarded). */
export const INTERNAL_SUFFIX = 'internal';

const DEFAULT_UPSTREAM_TIMEOUT_MS = 3000;
/** Forwards in flight at once; past it a query gets SERVFAIL at once (a flood must not take every socket). */
const MAX_FORWARDS_IN_FLIGHT = 512;
/** The largest UDP answer to a client without EDNS (RFC 1035); a bigger one of ours goes out truncated, for TCP. */
const MAX_UDP_ANSWER = 512;
/** The largest UDP answer to a client with EDNS (what it offers, at most the size DNS flag day 2020 advises). */
const MAX_EDNS_UDP_ANSWER = 1232;
const TCP_IDLE_MS = 10_000;

export interface ResolverOptions {
  /**
   * Answers for a name asked through the listener at `listener` (its host) by `client` (the
   * asker's address, which names its workspace): the name's IPv4
   * addresses ([] for a name of ours with nothing running), or null when the name is not
   * ours. `name` is lower case, without a trailing dot.
   */
  lookup(listener: string, name: string, client: string): string[] | null;
  /** Resolvers for names that are not ours, `host` or `host:port` (default: the system's, /etc/resolv.conf). */
  upstream?: string[];
  /** How long forwarding may take before the client gets SERVFAIL. */
  upstreamTimeoutMs?: number;
  logger?: Logger;
}

interface Listener {
  port: number;
  udp: UdpSocket;
  tcp: Server;
  connections: Set<Socket>;
}

/**
 * Berth's resolver for workloads: listens on UDP and TCP at each workspace's gateway
 * address and answers by the listener asked (see docs/decisions.md, "Internal DNS").
 */
export class InternalResolver {
  private readonly listeners = new Map<string, Promise<Listener>>();
  private readonly upstreams: Upstream[];
  private readonly timeoutMs: number;
  private readonly forwards = new Set<AbortController>();

  constructor(private readonly options: ResolverOptions) {
    this.upstreams = options.upstream ? options.upstream.map(parseUpstream) : systemUpstreams(options.logger);
    this.timeoutMs = options.upstreamTimeoutMs ?? DEFAULT_UPSTREAM_TIMEOUT_MS;
  }

  /**
   * Listens on `host:port` (UDP and TCP; port 0: a free one) and resolves to the port. Once
   * per host: while it listens there, another call gets the port it has.
   */
  listen(host: string, port = 53): Promise<number> {
    let listening = this.listeners.get(host);
    if (!listening) {
      listening = this.open(host, port);
      this.listeners.set(host, listening);
      const opening = listening;
      opening.catch(() => {
        if (this.listeners.get(host) === opening) this.listeners.delete(host);
      });
    }
    return listening.then((l) => l.port);
  }

  async unlisten(host: string): Promise<void> {
    const listening = this.listeners.get(host);
    if (!listening) return;
    this.listeners.delete(host);
    const listener = await listening.catch(() => null);
    if (!listener) return;
    for (const connection of listener.connections) connection.destroy();
    await Promise.all([
      new Promise<void>((resolve) => listener.udp.close(() => resolve())),
      new Promise<void>((resolve) => listener.tcp.close(() => resolve())),
    ]);
  }

  async close(): Promise<void> {
    for (const forward of this.forwards) forward.abort();
    await Promise.all([...this.listeners.keys()].map((host) => this.unlisten(host)));
  }

  private async open(host: string, port: number): Promise<Listener> {
    // With port 0 the UDP port is picked first and TCP takes the same one, which may be taken.
    for (let attempt = 1; ; attempt++) {
      const onError = (err: Error) => this.options.logger?.warn({ err, host }, 'internal DNS: socket error');
      const udp = await bindUdp(host, port, onError);
      const bound = udp.address().port;
      try {
        const connections = new Set<Socket>();
        const tcp = await listenTcp(host, bound, (socket) => this.serveTcp(host, socket, connections), onError);
        udp.on('message', (message, from) => {
          void this.answer(host, message, 'udp', from.address).then((reply) => {
            if (reply) sendQuietly(udp, reply, from.port, from.address);
          });
        });
        this.options.logger?.info({ host, port: bound }, 'internal DNS listening');
        return { port: bound, udp, tcp, connections };
      } catch (err) {
        udp.close();
        if (port !== 0 || attempt >= 5) throw err;
      }
    }
  }

  /** DNS over TCP (RFC 7766): 2-byte length-prefixed messages, answered as they come. */
  private serveTcp(host: string, socket: Socket, connections: Set<Socket>): void {
    connections.add(socket);
    socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
    socket.on('error', () => {});
    socket.on('close', () => connections.delete(socket));
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
        const message = buffered.subarray(2, 2 + buffered.readUInt16BE(0));
        buffered = buffered.subarray(2 + message.length);
        void this.answer(host, message, 'tcp', socket.remoteAddress ?? '').then((reply) => {
          if (!reply || socket.destroyed) return;
          const length = Buffer.alloc(2);
          length.writeUInt16BE(reply.length);
          socket.write(Buffer.concat([length, reply]));
        });
      }
    });
  }

  /** The reply to a message received by the listener at `host`, or null to drop it. Never throws. */
  private async answer(host: string, message: Buffer, transport: Transport, client: string): Promise<Buffer | null> {
    try {
      let query: dnsPacket.DecodedPacket;
      try {
        query = dnsPacket.decode(message);
      } catch {
        return null; // not DNS: dropped
      }
      const local = answerLocally(query, (name) => {
        try {
          return this.options.lookup(host, name, client.replace(/^::ffff:/, ''));
        } catch (err) {
          this.options.logger?.warn({ err, host, name }, 'internal DNS: lookup failed');
          throw err;
        }
      });
      if (local === null) return null;
      if (local !== 'forward') return encodeReply(local, transport === 'tcp' ? Infinity : udpLimit(query));
      return await this.forward(message, transport);
    } catch (err) {
      this.options.logger?.warn({ err, host }, 'internal DNS: query not answered');
      return null;
    }
  }

  private async forward(message: Buffer, transport: Transport): Promise<Buffer> {
    if (this.forwards.size < MAX_FORWARDS_IN_FLIGHT) {
      const abort = new AbortController();
      this.forwards.add(abort);
      try {
        const relayed = await forwardQuery(message, this.upstreams, transport, this.timeoutMs, abort.signal);
        if (relayed) return relayed;
      } finally {
        this.forwards.delete(abort);
      }
    }
    const query = dnsPacket.decode(message);
    return dnsPacket.encode(reply(query, 'SERVFAIL', [], 0));
  }
}

type Rcode = 'NOERROR' | 'FORMERR' | 'SERVFAIL' | 'NXDOMAIN' | 'NOTIMP';
const RCODES: Record<Rcode, number> = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4 };

/**
 * What a query gets without leaving this process: a reply, 'forward' for a name that is
 * neither ours nor internal, or null to drop a message that is not a query.
 * - a name the lookup knows: its addresses for A (TTL 5 s), no records for other types;
 * - `*.internal`, `internal` and single-label names it does not know: NXDOMAIN;
 * - anything else: forwarded.
 */
export function answerLocally(
  query: dnsPacket.DecodedPacket,
  lookup: (name: string) => string[] | null,
): dnsPacket.Packet | 'forward' | null {
  if (query.type !== 'query') return null;
  if ((((query.flags ?? 0) >> 11) & 0xf) !== 0) return reply(query, 'NOTIMP', [], 0); // opcode other than QUERY
  const questions = query.questions ?? [];
  const [question] = questions;
  if (questions.length !== 1 || !question) return reply(query, 'FORMERR', [], 0);
  const name = normalizeName(question.name);
  let addresses: string[] | null;
  try {
    addresses = lookup(name);
  } catch {
    return reply(query, 'SERVFAIL', [], 0);
  }
  if (addresses !== null) {
    const wantsA = question.type === 'A' && (question.class ?? 'IN') === 'IN';
    const answers: dnsPacket.Answer[] = wantsA
      ? addresses
          .filter((a) => isIPv4(a))
          .map((data) => ({ name: question.name, type: 'A', ttl: INTERNAL_TTL_SECONDS, data }))
      : [];
    return reply(query, 'NOERROR', answers, dnsPacket.AUTHORITATIVE_ANSWER);
  }
  if (isInternalName(name)) return reply(query, 'NXDOMAIN', [], dnsPacket.AUTHORITATIVE_ANSWER);
  return 'forward';
}

/** The system's resolvers (/etc/resolv.conf), less any this process cannot address (a scoped IPv6 one). */
function systemUpstreams(logger: Logger | undefined): Upstream[] {
  return getServers().flatMap((entry) => {
    try {
      return [parseUpstream(entry)];
    } catch (err) {
      logger?.warn({ err }, 'internal DNS: a system resolver is skipped');
      return [];
    }
  });
}

/** Lower case, no trailing dot (the root is ''). */
export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

/** Names only Berth may answer: under `internal`, or a single label (never sent upstream). */
export function isInternalName(name: string): boolean {
  if (name === '') return false;
  return name === INTERNAL_SUFFIX || name.endsWith(`.${INTERNAL_SUFFIX}`) || !name.includes('.');
}

function reply(
  query: dnsPacket.DecodedPacket,
  rcode: Rcode,
  answers: dnsPacket.Answer[],
  flags: number,
): dnsPacket.Packet {
  const edns: dnsPacket.Answer[] = ednsOf(query)
    ? [
        {
          type: 'OPT',
          name: '.',
          udpPayloadSize: MAX_EDNS_UDP_ANSWER,
          extendedRcode: 0,
          ednsVersion: 0,
          flags: 0,
          flag_do: false,
          options: [],
        },
      ]
    : [];
  return {
    id: query.id,
    type: 'response',
    flags: flags | dnsPacket.RECURSION_AVAILABLE | ((query.flags ?? 0) & dnsPacket.RECURSION_DESIRED) | RCODES[rcode],
    questions: query.questions,
    answers,
    additionals: edns,
  };
}

function ednsOf(query: dnsPacket.DecodedPacket): dnsPacket.OptAnswer | undefined {
  return query.additionals?.find((a): a is dnsPacket.OptAnswer => a.type === 'OPT');
}

/** How big a UDP answer the client takes: 512 bytes, or what its EDNS record offers (up to 1232). */
function udpLimit(query: dnsPacket.DecodedPacket): number {
  const offered = ednsOf(query)?.udpPayloadSize ?? 0;
  return Math.min(Math.max(offered, MAX_UDP_ANSWER), MAX_EDNS_UDP_ANSWER);
}

/** An answer past `limit` bytes goes out with no records and the TC flag (the client asks again over TCP). */
function encodeReply(packet: dnsPacket.Packet, limit: number): Buffer {
  const encoded = dnsPacket.encode(packet);
  if (encoded.length <= limit) return encoded;
  return dnsPacket.encode({ ...packet, answers: [], flags: (packet.flags ?? 0) | dnsPacket.TRUNCATED_RESPONSE });
}

/** A reply to a client; the socket may have closed meanwhile (unlisten), and then it is dropped. */
function sendQuietly(udp: UdpSocket, reply: Buffer, port: number, address: string): void {
  try {
    udp.send(reply, port, address, () => {});
  } catch {
    // closed
  }
}

/** A bound socket; errors after binding go to `onError` (an 'error' event with no listener would end the process). */
function bindUdp(host: string, port: number, onError: (err: Error) => void): Promise<UdpSocket> {
  const udp = createSocket({ type: isIP(host) === 6 ? 'udp6' : 'udp4' });
  return new Promise((resolve, reject) => {
    udp.once('error', reject);
    udp.bind({ address: host, port, exclusive: true }, () => {
      udp.off('error', reject);
      udp.on('error', onError);
      resolve(udp);
    });
  });
}

function listenTcp(
  host: string,
  port: number,
  serve: (socket: Socket) => void,
  onError: (err: Error) => void,
): Promise<Server> {
  const server = createServer(serve);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, () => {
      server.off('error', reject);
      server.on('error', onError);
      resolve(server);
    });
  });
}
