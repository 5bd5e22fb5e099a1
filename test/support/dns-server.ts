import dns2 from 'dns2';

const { Packet } = dns2;

export interface TxtRecord {
  /** The strings of the TXT record(s) at this name. */
  values: string[];
  /** Lookups answered with no record before the record appears (0: there from the start). */
  afterLookups?: number;
}

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, for BERTH_DNS_SERVERS. */
  address: string;
  /** Serves (or replaces) TXT records at a name. */
  setTxt(name: string, record: TxtRecord): void;
  /** TXT lookups seen per name. */
  lookups(name: string): number;
  close(): Promise<void>;
}

/**
 * A real DNS server on loopback (UDP, dns2) for verification tests: names it does not
 * know answer NXDOMAIN; a known name answers NOERROR with no records until it has been
 * asked `afterLookups` times, then serves its TXT records.
 */
export async function startDnsServer(): Promise<TestDnsServer> {
  const records = new Map<string, TxtRecord>();
  const counts = new Map<string, number>();
  const server = dns2.createServer({
    udp: true,
    handle(request, send) {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      if (question) {
        const name = question.name.toLowerCase();
        const record = records.get(name);
        if (question.type === Packet.TYPE.TXT) counts.set(name, (counts.get(name) ?? 0) + 1);
        if (!record) {
          response.header.rcode = 3; // NXDOMAIN
        } else if (question.type === Packet.TYPE.TXT && (counts.get(name) ?? 0) > (record.afterLookups ?? 0)) {
          for (const value of record.values) {
            response.answers.push({
              name: question.name,
              type: Packet.TYPE.TXT,
              class: Packet.CLASS.IN,
              ttl: 0,
              data: value,
            } as never);
          }
        }
      }
      void send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  return {
    address: `127.0.0.1:${addresses.udp!.port}`,
    setTxt(name, record) {
      records.set(name.toLowerCase(), record);
    },
    lookups: (name) => counts.get(name.toLowerCase()) ?? 0,
    close: () => server.close(),
  };
}
