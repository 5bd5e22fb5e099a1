import { createHash } from 'node:crypto';
import {
  Agent,
  createServer,
  request,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { mayDo, SUBRESOURCES, type Caller, type S3Operation } from './access';
import {
  decodeAwsChunked,
  readBody,
  SIGNED_CHUNKS,
  UNSIGNED_CHUNKS_WITH_TRAILER,
  type ChunkSigner,
} from './aws-chunked';
import type { StoreGrants } from './grants';
import { s3Error, sendS3Error, type S3Error } from './s3-error';
import { claimOf, PRESIGN_PARAMS, UNSIGNED_PAYLOAD, type IncomingS3Request } from './signature';

export interface GatewayOptions {
  grants: StoreGrants;
  region: string;
  /** The Unix socket s3rver listens on (reachable by Berth's user only). */
  upstreamSocket: string;
  /** Bodies whose SHA-256 the client signed are held in memory to be checked before they are stored. */
  maxSignedBodyBytes?: number;
}

/** `<bucket>.storage.<domain>`: a bucket's public_endpoint (virtual-hosted style); anything else is path-style. */
const PUBLIC_HOST = /^([a-z0-9][a-z0-9-]{1,61}[a-z0-9])\.storage\.[^:]+(:\d+)?$/i;
const HEX_SHA256 = /^[0-9a-f]{64}$/;

function decode(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

interface Parsed {
  request: IncomingS3Request;
  operation: S3Operation;
  /** The path and query s3rver is asked for: path-style, without the signature's parameters. */
  upstreamPath: string;
}

function parse(req: IncomingMessage): Parsed | S3Error {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const rawPath = q < 0 ? url : url.slice(0, q);
  const rawPairs =
    q < 0
      ? []
      : url
          .slice(q + 1)
          .split('&')
          .filter(Boolean);
  const query: Array<[string, string]> = [];
  const upstreamQuery: string[] = [];
  for (const pair of rawPairs) {
    const eq = pair.indexOf('=');
    const k = decode(eq < 0 ? pair : pair.slice(0, eq));
    const v = decode(eq < 0 ? '' : pair.slice(eq + 1));
    if (k === null || v === null) return s3Error('InvalidArgument', 'the query string is not valid percent-encoding');
    query.push([k, v]);
    if (!PRESIGN_PARAMS.includes(k)) upstreamQuery.push(pair);
  }
  const vhost = PUBLIC_HOST.exec(req.headers.host ?? '');
  const segments = rawPath.replace(/^\/+/, '').split('/');
  const rawBucket = vhost ? vhost[1]!.toLowerCase() : segments[0] || null;
  const rawKey = vhost ? rawPath.replace(/^\/+/, '') : segments.slice(1).join('/');
  const bucket = rawBucket === null ? null : decode(rawBucket);
  const key = rawKey ? decode(rawKey) : null;
  if ((rawBucket && bucket === null) || (rawKey && key === null))
    return s3Error('InvalidArgument', 'the path is not valid percent-encoding');
  const copySource = req.headers['x-amz-copy-source'];
  const copyPath = typeof copySource === 'string' ? decode(copySource.split('?')[0]!.replace(/^\/+/, '')) : null;
  const upstreamRawPath = vhost ? `/${encodeURIComponent(bucket!)}/${rawKey}` : rawPath;
  return {
    request: { method: req.method ?? 'GET', rawPath, query, headers: req.headers },
    operation: {
      method: req.method ?? 'GET',
      bucket,
      key,
      subresource: query.some(([k]) => SUBRESOURCES.has(k)),
      copySourceBucket: copyPath === null ? null : copyPath.split('/')[0]!,
    },
    upstreamPath: upstreamQuery.length ? `${upstreamRawPath}?${upstreamQuery.join('&')}` : upstreamRawPath,
  };
}

/**
 * The object store's front door: every request is authenticated (AWS SigV4, header or
 * presigned, recomputed with the key's stored secret) and authorized (access.ts) before
 * it reaches s3rver, which listens on a Unix socket only this process's user can open.
 * Refusals are S3 error documents (`AccessDenied`, 403).
 */
export function createObjectStoreGateway(options: GatewayOptions): Server {
  const limit = options.maxSignedBodyBytes ?? 256 * 2 ** 20;
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });

  const identify = async (
    parsed: Parsed,
  ): Promise<{ caller: Caller; payloadHash: string | null; chunkSigner: ChunkSigner | null } | S3Error> => {
    const claim = claimOf(parsed.request, options.region);
    if ('code' in claim) return claim;
    if (claim.kind === 'anonymous') return { caller: { kind: 'anonymous' }, payloadHash: null, chunkSigner: null };
    const holder = options.grants.holderOf(claim.accessKey);
    // Unknown key and wrong signature get the same answer: nothing tells which keys exist.
    if (!holder || !(await claim.verify(holder.secret))) return s3Error('AccessDenied', 'Access Denied');
    const caller: Caller =
      holder.bucket === null ? { kind: 'operator' } : { kind: 'bucket-key', bucket: holder.bucket };
    const sign = claim.chunkSignature;
    return {
      caller,
      payloadHash: claim.via === 'header' ? claim.payloadHash : null,
      chunkSigner: sign ? (previous, chunk) => sign(holder.secret, previous, chunk) : null,
    };
  };

  const forward = (req: IncomingMessage, res: ServerResponse, parsed: Parsed, body: Buffer | null) => {
    const headers: IncomingHttpHeaders = { ...req.headers, host: 'localhost' };
    delete headers.authorization;
    if (body) {
      headers['content-length'] = String(body.length);
      delete headers['transfer-encoding'];
      delete headers.expect;
      // a decoded aws-chunked body is the object's own bytes
      const encodings = (headers['content-encoding'] ?? '').split(',').map((e) => e.trim());
      const rest = encodings.filter((e) => e && e !== 'aws-chunked');
      if (rest.length) headers['content-encoding'] = rest.join(',');
      else delete headers['content-encoding'];
      delete headers['x-amz-decoded-content-length'];
      delete headers['x-amz-trailer'];
    }
    const upstream = request({
      socketPath: options.upstreamSocket,
      agent,
      method: req.method,
      path: parsed.upstreamPath,
      headers,
    });
    upstream.on('response', (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    upstream.on('error', () => {
      if (!res.headersSent)
        sendS3Error(
          res,
          req.method ?? 'GET',
          s3Error('ServiceUnavailable', 'the store did not answer'),
          req.url ?? '/',
        );
      else res.destroy();
    });
    if (body) upstream.end(body);
    else req.pipe(upstream);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const method = req.method ?? 'GET';
    const refuse = (error: S3Error) => sendS3Error(res, method, error, req.url ?? '/');
    const parsed = parse(req);
    if ('code' in parsed) return refuse(parsed);
    const who = await identify(parsed);
    if ('code' in who) return refuse(who);
    if (!mayDo(who.caller, parsed.operation, (b) => options.grants.isPublic(b)))
      return refuse(s3Error('AccessDenied', 'Access Denied'));
    const hash = who.payloadHash;
    if (hash === null || hash === UNSIGNED_PAYLOAD) return forward(req, res, parsed, null);
    const chunked = hash === SIGNED_CHUNKS || hash === UNSIGNED_CHUNKS_WITH_TRAILER;
    if (!chunked && !HEX_SHA256.test(hash.toLowerCase()))
      return refuse(
        hash.startsWith('STREAMING-')
          ? s3Error(
              'NotImplemented',
              `${hash} is not supported; sign the payload, send UNSIGNED-PAYLOAD or ${SIGNED_CHUNKS}`,
            )
          : s3Error('InvalidArgument', 'x-amz-content-sha256 must be UNSIGNED-PAYLOAD or a SHA-256 in hex'),
      );
    // A body its signature covers is checked whole before s3rver stores any of it.
    const raw = await readBody(req, limit);
    if (!Buffer.isBuffer(raw)) return refuse(raw);
    if (!chunked) {
      if (createHash('sha256').update(raw).digest('hex') !== hash.toLowerCase())
        return refuse(s3Error('XAmzContentSHA256Mismatch', 'the body does not hash to x-amz-content-sha256'));
      return forward(req, res, parsed, raw);
    }
    const body = await decodeAwsChunked(raw, hash === SIGNED_CHUNKS ? who.chunkSigner : null);
    if (!Buffer.isBuffer(body)) return refuse(body);
    const declared = req.headers['x-amz-decoded-content-length'];
    if (declared !== undefined && Number(declared) !== body.length)
      return refuse(s3Error('IncompleteBody', 'the body is not x-amz-decoded-content-length bytes'));
    forward(req, res, parsed, body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent)
        sendS3Error(res, req.method ?? 'GET', s3Error('ServiceUnavailable', 'internal error'), req.url ?? '/');
      else res.destroy();
    });
  });
  server.on('close', () => agent.destroy());
  return server;
}
