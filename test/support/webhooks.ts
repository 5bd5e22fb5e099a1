import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import dns2 from 'dns2';
import { SMTPServer } from 'smtp-server';
import type { DataSource } from 'typeorm';

/** Webhook tests deliver to this loopback address, the only one the allow-list lets through. */
export const RECEIVER_HOST = '127.0.0.2';
export const RECEIVER_ALLOW = `${RECEIVER_HOST}/32`;

export interface Hit {
  at: number;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Answer {
  status: number;
  body?: string;
  headers?: Record<string, string>;
}

export interface Receiver {
  url: string;
  port: number;
  hits: Hit[];
  /** Decides each answer (default 200 "ok"). */
  respond: (hit: Hit, index: number) => Answer | Promise<Answer>;
  hitsFor(eventId: string): Hit[];
  close(): Promise<void>;
}

/** A real HTTP receiver on 127.0.0.2 that records every request it gets. */
export async function startReceiver(respond?: Receiver['respond']): Promise<Receiver> {
  const hits: Hit[] = [];
  const receiver: Receiver = {
    url: '',
    port: 0,
    hits,
    respond: respond ?? (() => ({ status: 200, body: 'ok' })),
    hitsFor: (eventId) => hits.filter((h) => h.headers['webhook-id'] === eventId),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const hit: Hit = {
        at: Date.now(),
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      hits.push(hit);
      void Promise.resolve(receiver.respond(hit, hits.length - 1)).then((answer) => {
        if (res.destroyed) return;
        res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
        res.end(answer.body ?? '');
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, RECEIVER_HOST, resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://${RECEIVER_HOST}:${receiver.port}/hook`;
  return receiver;
}

export interface DnsServer {
  /** `127.0.0.1:<port>`, for BERTH_DNS_SERVERS. */
  address: string;
  /** What a name resolves to from now on (A for IPv4, AAAA for IPv6 addresses). */
  set(name: string, addresses: string[]): void;
  queries: string[];
  close(): Promise<void>;
}

/** A real DNS server on loopback (UDP and TCP) answering from a table the test changes. */
export async function startDnsServer(): Promise<DnsServer> {
  const { Packet } = dns2;
  const table = new Map<string, string[]>();
  const queries: string[] = [];
  const server = dns2.createServer({
    udp: true,
    tcp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      const name = question!.name.toLowerCase().replace(/\.$/, '');
      queries.push(name);
      const addresses = table.get(name);
      if (!addresses) {
        response.header.rcode = 3; // NXDOMAIN
        send(response);
        return;
      }
      const wantV6 = question!.type === Packet.TYPE.AAAA;
      for (const address of addresses.filter((a) => a.includes(':') === wantV6)) {
        response.answers.push({
          name: question!.name,
          type: wantV6 ? Packet.TYPE.AAAA : Packet.TYPE.A,
          class: Packet.CLASS.IN,
          ttl: 0,
          address,
        } as never);
      }
      send(response);
    },
  });
  const { udp } = (await server.listen({
    udp: { port: 0, address: '127.0.0.1' },
    tcp: { port: 0, address: '127.0.0.1' },
  })) as unknown as { udp: AddressInfo };
  return {
    address: `127.0.0.1:${udp.port}`,
    set: (name, addresses) => {
      table.set(name.toLowerCase(), addresses);
    },
    queries,
    close: () => server.close(),
  };
}

export interface Mail {
  from: string;
  to: string[];
  subject: string;
  raw: string;
}

export interface SmtpReceiver {
  /** For BERTH_SMTP_URL. */
  url: string;
  messages: Mail[];
  close(): Promise<void>;
}

/** A real SMTP server (smtp-server) on loopback that keeps every message it receives. */
export async function startSmtpReceiver(): Promise<SmtpReceiver> {
  const messages: Mail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const subject = /^Subject: (.*(?:\r?\n[ \t].*)*)/m.exec(raw)?.[1]?.replace(/\r?\n[ \t]/g, ' ') ?? '';
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address).sort(),
          subject,
          raw,
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** An app row (the apps area owns the routes; webhooks only need the scoping columns). */
export async function insertApp(
  ds: DataSource,
  workspaceUuid: string,
  resourceUuid: string,
  options: { previewParentUuid?: string; label?: string } = {},
): Promise<string> {
  const uuid = randomUUID();
  const name = `app-${uuid.slice(0, 8)}`;
  await ds.query(
    `INSERT INTO apps (uuid, workspace_uuid, resource_uuid, name, service_name, label, state, preview_parent_uuid)
     VALUES ($1, $2, $3, $4, $5, $6, 'running', $7)`,
    [
      uuid,
      workspaceUuid,
      resourceUuid,
      name,
      name.replace(/-[^-]+$/, ''),
      options.label ?? name,
      options.previewParentUuid ?? null,
    ],
  );
  return uuid;
}
