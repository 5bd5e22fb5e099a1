import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { checkDestination, resolvedVerdict, type AllowList } from '../domain/webhook-destination';
import { truncateMessage } from '../domain/webhooks';
import { ResolutionError, type HostResolver } from '../platform/resolver';

export type PostResult =
  /** The endpoint answered (any status). */
  | { kind: 'response'; status: number; message: string }
  /** No response: connection, TLS, timeout or DNS failure (worth retrying). */
  | { kind: 'error'; message: string }
  /** The destination is (now) private: never connected to, not worth retrying. */
  | { kind: 'refused'; message: string };

export interface PostOptions {
  url: string;
  body: string;
  headers: Record<string, string>;
  allow: AllowList;
  resolver: HostResolver;
  timeoutMs: number;
}

/** How much of a response body is read (the delivery keeps 500 characters of it). */
const BODY_READ_LIMIT = 4096;

/** A lookup that answers only the vetted address: the socket cannot go anywhere else. */
function pinnedLookup(address: string) {
  const family = isIP(address);
  return (_hostname: string, options: { all?: boolean }, callback: (...args: any[]) => void) => {
    if (options?.all) callback(null, [{ address, family } satisfies LookupAddress]);
    else callback(null, address, family);
  };
}

async function readMessage(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= BODY_READ_LIMIT) {
      body.destroy();
      break;
    }
  }
  return truncateMessage(Buffer.concat(chunks).subarray(0, BODY_READ_LIMIT).toString('utf8'));
}

function errorMessage(err: unknown): string {
  const e = err as Error & { code?: string; cause?: Error & { code?: string } };
  const inner = e.cause && e.cause.message && e.cause.message !== e.message ? `: ${e.cause.message}` : '';
  const code = e.code ?? e.cause?.code;
  return truncateMessage(
    `${e.name === 'Error' ? '' : `${e.name}: `}${e.message}${inner}${code && !e.message.includes(code) ? ` (${code})` : ''}`,
  );
}

/**
 * POSTs a webhook body: checks the URL, resolves the hostname afresh and checks every
 * address, then connects only to the vetted address (the lookup is pinned, so there is
 * no gap between the check and the connection). Redirects are not followed: a 3xx is
 * just a non-2xx answer.
 */
export async function postWebhook(options: PostOptions): Promise<PostResult> {
  const destination = checkDestination(options.url, options.allow);
  if (!destination.ok) return { kind: 'refused', message: truncateMessage(`destination ${destination.reason}`) };
  let address = destination.host;
  if (!destination.literal) {
    let addresses: string[];
    try {
      addresses = await options.resolver.resolve(destination.host);
    } catch (err) {
      if (err instanceof ResolutionError) return { kind: 'error', message: truncateMessage(`DNS: ${err.message}`) };
      throw err;
    }
    const verdict = resolvedVerdict(destination.host, addresses, options.allow);
    if (!verdict.allowed)
      return { kind: 'refused', message: truncateMessage(`destination refused: ${verdict.reason}; not delivered`) };
    address = addresses[0]!;
  }
  const agent = new Agent({
    connect: { lookup: pinnedLookup(address) as never, timeout: options.timeoutMs },
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    connections: 1,
    pipelining: 0,
  });
  try {
    const res = await request(destination.url, {
      method: 'POST',
      body: options.body,
      headers: { 'content-type': 'application/json', 'user-agent': 'Berth-Webhooks/1', ...options.headers },
      dispatcher: agent,
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    let message: string;
    try {
      message = await readMessage(res.body);
    } catch (err) {
      message = `response body unreadable: ${errorMessage(err)}`;
    }
    return { kind: 'response', status: res.statusCode, message: truncateMessage(message) };
  } catch (err) {
    return { kind: 'error', message: errorMessage(err) };
  } finally {
    agent.destroy().catch(() => {});
  }
}
