import { lookup as systemLookup, Resolver } from 'node:dns/promises';

/** Resolves a hostname to every address it has now (A and AAAA), uncached. */
export interface HostResolver {
  resolve(hostname: string): Promise<string[]>;
}

export class ResolutionError extends Error {
  constructor(
    readonly hostname: string,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ResolutionError';
  }
}

const NO_ANSWER = new Set(['ENODATA', 'ENOTFOUND', 'NOTFOUND', 'ENONAME']);

/**
 * A real resolver: the DNS servers of BERTH_DNS_SERVERS (`ip` or `ip:port`) when set,
 * queried directly for A and AAAA; otherwise the system's resolver (getaddrinfo, so
 * /etc/hosts counts). Used by webhook destination checks (API and delivery) and anything
 * else that must see what a name resolves to at this moment.
 */
export function createHostResolver(dnsServers: readonly string[], options: { timeoutMs?: number } = {}): HostResolver {
  const timeoutMs = options.timeoutMs ?? 3000;
  if (dnsServers.length === 0) {
    return {
      async resolve(hostname) {
        try {
          const found = await systemLookup(hostname, { all: true, verbatim: true });
          return [...new Set(found.map((a) => a.address))];
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code ?? 'ERROR';
          throw new ResolutionError(hostname, code, `${hostname} does not resolve (${code})`);
        }
      },
    };
  }
  return {
    async resolve(hostname) {
      const resolver = new Resolver({ timeout: timeoutMs, tries: 2 });
      resolver.setServers([...dnsServers]);
      const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
      const addresses = [
        ...(v4.status === 'fulfilled' ? v4.value : []),
        ...(v6.status === 'fulfilled' ? v6.value : []),
      ];
      if (addresses.length > 0) return [...new Set(addresses)];
      const failures = [v4, v6]
        .filter((r): r is PromiseRejectedResult => r.status === 'rejected')
        .map((r) => (r.reason as NodeJS.ErrnoException).code ?? 'ERROR');
      const code = failures.find((c) => !NO_ANSWER.has(c)) ?? failures[0] ?? 'ENODATA';
      throw new ResolutionError(hostname, code, `${hostname} does not resolve (${code})`);
    },
  };
}
