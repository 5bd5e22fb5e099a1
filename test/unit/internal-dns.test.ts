import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import { connect, createServer } from 'node:net';
import * as dnsPacket from 'dns-packet';
import { InternalResolver } from '../../activities/provider/local/network/dns';

interface FakeUpstream {
  address: string;
  /** Names asked, over UDP or TCP. */
  asked: string[];
  askedOverTcp: string[];
  silent: boolean;
  close(): void;
}

/** A fake upstream on 127.0.0.1 (UDP and TCP, one port): answers A 203.0.113.7 for any name unless silent. */
async function startUpstream(): Promise<FakeUpstream> {
  const udp: UdpSocket = createSocket('udp4');
  const tcp = createServer((socket) => {
    socket.on('data', (framed: Buffer) => {
      upstream.askedOverTcp.push(dnsPacket.decode(framed.subarray(2)).questions![0].name);
      const reply = answerTo(framed.subarray(2));
      if (reply) socket.end(dnsPacket.streamEncode(dnsPacket.decode(reply)));
    });
  });
  const upstream: FakeUpstream = {
    address: '',
    asked: [],
    askedOverTcp: [],
    silent: false,
    close: () => {
      udp.close();
      tcp.close();
    },
  };
  const answerTo = (message: Buffer): Buffer | null => {
    const query = dnsPacket.decode(message);
    const question = query.questions![0];
    upstream.asked.push(question.name);
    if (upstream.silent) return null;
    return dnsPacket.encode({
      id: query.id,
      type: 'response',
      flags: dnsPacket.RECURSION_AVAILABLE,
      questions: query.questions,
      answers: [{ name: question.name, type: 'A', ttl: 60, data: '203.0.113.7' }],
    });
  };
  udp.on('message', (message, from) => {
    const reply = answerTo(message);
    if (reply) udp.send(reply, from.port, from.address);
  });
  await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => tcp.listen(udp.address().port, '127.0.0.1', resolve));
  upstream.address = `127.0.0.1:${udp.address().port}`;
  return upstream;
}

/** One query over TCP (a length-prefixed message on a connection of its own). */
async function tcpQuery(host: string, port: number, name: string): Promise<dnsPacket.DecodedPacket> {
  const query = dnsPacket.streamEncode({
    id: 4242,
    type: 'query',
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ name, type: 'A' }],
  });
  const reply = await new Promise<Buffer>((resolve, reject) => {
    const socket = connect({ host, port }, () => socket.write(query));
    let received = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('close', () => reject(new Error('closed without an answer')));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length >= 2 && received.length >= 2 + received.readUInt16BE(0)) {
        socket.destroy();
        resolve(received);
      }
    });
  });
  return dnsPacket.decode(reply.subarray(2));
}

/** One query over UDP from a socket of its own, without the client's EDNS unless given. */
async function udpQuery(host: string, port: number, packet: dnsPacket.Packet): Promise<dnsPacket.DecodedPacket> {
  const socket = createSocket('udp4');
  try {
    return await new Promise((resolve) => {
      socket.on('message', (message) => resolve(dnsPacket.decode(message)));
      socket.send(dnsPacket.encode({ id: 7, type: 'query', ...packet }), port, host);
    });
  } finally {
    socket.close();
  }
}

function clientOf(host: string, port: number): Resolver {
  const client = new Resolver({ timeout: 2000, tries: 1 });
  client.setServers([`${host}:${port}`]);
  return client;
}

const code = (promise: Promise<unknown>) =>
  promise.then(
    () => 'answered',
    (err: NodeJS.ErrnoException) => err.code,
  );

describe('the internal resolver (issue 25 item 3)', () => {
  const UPSTREAM_TIMEOUT_MS = 400;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let resolver: InternalResolver;
  const asked: Array<[string, string]> = [];
  /** Per listener host: name -> addresses. */
  const zones: Record<string, Record<string, string[]>> = {
    '127.0.0.2': {
      'web.internal': ['10.213.7.10', '10.213.7.11'],
      web: ['10.213.7.10', '10.213.7.11'],
      idle: [],
      many: Array.from({ length: 40 }, (_, i) => `10.213.7.${i + 20}`),
      lots: Array.from({ length: 100 }, (_, i) => `10.213.7.${i + 100}`),
    },
    '127.0.0.3': { 'web.internal': ['10.213.8.10'] },
  };
  let port2: number;
  let port3: number;

  beforeAll(async () => {
    upstream = await startUpstream();
    resolver = new InternalResolver({
      upstream: [upstream.address],
      upstreamTimeoutMs: UPSTREAM_TIMEOUT_MS,
      lookup(listener, name) {
        asked.push([listener, name]);
        if (name === 'boom.internal') throw new Error('the lookup broke');
        return zones[listener]?.[name] ?? null;
      },
    });
    port2 = await resolver.listen('127.0.0.2', 0);
    port3 = await resolver.listen('127.0.0.3', 0);
  });
  afterAll(async () => {
    await resolver.close();
    upstream.close();
  });
  beforeEach(() => {
    upstream.silent = false;
    upstream.asked.length = 0;
    upstream.askedOverTcp.length = 0;
    asked.length = 0;
  });

  it("answers a known name with every replica's address, 5 s TTL, whatever its case or trailing dot", async () => {
    const client = clientOf('127.0.0.2', port2);
    const answers = await client.resolve4('web.internal', { ttl: true });
    expect(answers.map((a) => a.address).sort()).toEqual(['10.213.7.10', '10.213.7.11']);
    expect(answers.every((a) => a.ttl === 5)).toBe(true);
    expect((await client.resolve4('WEB.Internal.')).sort()).toEqual(['10.213.7.10', '10.213.7.11']);
    expect((await client.resolve4('web')).sort()).toEqual(['10.213.7.10', '10.213.7.11']);
    expect(asked).toContainEqual(['127.0.0.2', 'web.internal']);
    expect(upstream.asked).toEqual([]);
  });

  it('gives a known name no AAAA records (NOERROR, no data), and a known name with nothing running no A', async () => {
    const client = clientOf('127.0.0.2', port2);
    expect(await code(client.resolve6('web.internal'))).toBe('ENODATA');
    expect(await code(client.resolve4('idle'))).toBe('ENODATA');
    expect(upstream.asked).toEqual([]);
  });

  it('answers NXDOMAIN for unknown internal and single-label names, never asking upstream', async () => {
    const client = clientOf('127.0.0.2', port2);
    expect(await code(client.resolve4('x.internal'))).toBe('ENOTFOUND');
    expect(await code(client.resolve6('deep.x.Internal.'))).toBe('ENOTFOUND');
    expect(await code(client.resolve4('db'))).toBe('ENOTFOUND');
    expect(upstream.asked).toEqual([]);
  });

  it("forwards other names upstream and relays the upstream's answer", async () => {
    const client = clientOf('127.0.0.2', port2);
    expect(await client.resolve4('registry.example.org')).toEqual(['203.0.113.7']);
    expect(upstream.asked).toEqual(['registry.example.org']);
  });

  it('answers SERVFAIL when upstream stays silent, within the timeout', async () => {
    upstream.silent = true;
    const client = clientOf('127.0.0.2', port2);
    const started = Date.now();
    expect(await code(client.resolve4('slow.example.org'))).toBe('ESERVFAIL');
    expect(Date.now() - started).toBeLessThan(UPSTREAM_TIMEOUT_MS + 1000);
    expect(upstream.asked).toEqual(['slow.example.org']);
  });

  it('answers by the listener asked: each workspace sees its own names', async () => {
    expect(await clientOf('127.0.0.2', port2).resolve4('web.internal')).toHaveLength(2);
    expect(await clientOf('127.0.0.3', port3).resolve4('web.internal')).toEqual(['10.213.8.10']);
    expect(await code(clientOf('127.0.0.3', port3).resolve4('web'))).toBe('ENOTFOUND');
    expect(asked).toEqual([
      ['127.0.0.2', 'web.internal'],
      ['127.0.0.3', 'web.internal'],
      ['127.0.0.3', 'web'],
    ]);
  });

  it('truncates a UDP answer past what the client takes (512 bytes, or its EDNS size up to 1232)', async () => {
    const plain = await udpQuery('127.0.0.2', port2, { questions: [{ name: 'many', type: 'A' }] });
    expect(plain.flag_tc).toBe(true);
    expect(plain.answers).toEqual([]);
    const edns = await udpQuery('127.0.0.2', port2, {
      questions: [{ name: 'many', type: 'A' }],
      additionals: [
        {
          type: 'OPT',
          name: '.',
          udpPayloadSize: 4096,
          extendedRcode: 0,
          ednsVersion: 0,
          flags: 0,
          flag_do: false,
          options: [],
        },
      ],
    });
    expect(edns.flag_tc).toBe(false);
    expect(edns.answers).toHaveLength(40);
    expect(edns.additionals?.map((a) => a.type)).toEqual(['OPT']);
  });

  it('gives the whole answer over TCP when the client retries there after a truncated one', async () => {
    expect(await clientOf('127.0.0.2', port2).resolve4('lots')).toHaveLength(100);
  });

  it('answers over TCP on the same port, and forwards over TCP what comes over TCP', async () => {
    const internal = await tcpQuery('127.0.0.3', port3, 'web.internal');
    expect(internal.id).toBe(4242);
    expect(internal.answers?.map((a) => (a as dnsPacket.StringAnswer).data)).toEqual(['10.213.8.10']);
    const outside = await tcpQuery('127.0.0.3', port3, 'registry.example.org');
    expect(outside.id).toBe(4242);
    expect(outside.answers?.map((a) => (a as dnsPacket.StringAnswer).data)).toEqual(['203.0.113.7']);
    expect(upstream.askedOverTcp).toEqual(['registry.example.org']);
  });

  it('answers SERVFAIL when the lookup throws, and keeps answering', async () => {
    const client = clientOf('127.0.0.2', port2);
    expect(await code(client.resolve4('boom.internal'))).toBe('ESERVFAIL');
    expect(await client.resolve4('web.internal')).toHaveLength(2);
    expect(upstream.asked).toEqual([]);
  });

  it('drops garbage and keeps answering', async () => {
    const socket = createSocket('udp4');
    const garbage = [
      Buffer.from('not dns at all'),
      Buffer.alloc(3),
      Buffer.from([0, 1, 0, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c]), // 65535 questions, a pointer loop
    ];
    for (const packet of garbage) {
      await new Promise<void>((resolve) => socket.send(packet, port2, '127.0.0.2', () => resolve()));
    }
    socket.close();
    expect(await clientOf('127.0.0.2', port2).resolve4('web.internal')).toHaveLength(2);
  });

  it('listens once per host, and stops answering there when told', async () => {
    expect(await resolver.listen('127.0.0.3', 0)).toBe(port3);
    await resolver.unlisten('127.0.0.3');
    expect(await code(clientOf('127.0.0.3', port3).resolve4('web.internal'))).toMatch(/ECONNREFUSED|ETIMEOUT/);
    port3 = await resolver.listen('127.0.0.3', 0);
    expect(await clientOf('127.0.0.3', port3).resolve4('web.internal')).toEqual(['10.213.8.10']);
  });
});
