import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Hash } from '@smithy/hash-node';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { s3Error, type S3Error } from './s3-error';

/**
 * Verification of AWS Signature Version 4 on requests to the embedded object store, as S3
 * does it: the signature is recomputed with the stored secret by @smithy/signature-v4 (the
 * AWS SDK's own signer) and compared in constant time; the request time must be within
 * 15 minutes of the store's clock; a presigned URL must not have expired (at most 7 days).
 * The payload hash the client signed is checked against the body by the gateway.
 */

const ALGORITHM = 'AWS4-HMAC-SHA256';
const CHUNK_ALGORITHM = 'AWS4-HMAC-SHA256-PAYLOAD';
const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');
const MAX_SKEW_MS = 15 * 60_000;
const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;
export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
const PAYLOAD_HEADER = 'x-amz-content-sha256';
/** Query parameters of a presigned URL; the signer adds them back when it recomputes the signature. */
export const PRESIGN_PARAMS = [
  'X-Amz-Algorithm',
  'X-Amz-Credential',
  'X-Amz-Date',
  'X-Amz-Expires',
  'X-Amz-SignedHeaders',
  'X-Amz-Signature',
  'X-Amz-Security-Token',
];

/** A request as it came in: the raw path (still percent-encoded) and the query's decoded pairs. */
export interface IncomingS3Request {
  method: string;
  rawPath: string;
  query: ReadonlyArray<readonly [string, string]>;
  headers: IncomingHttpHeaders;
}

/** Who a request says it is, before the signature is checked. */
export type Claim =
  | { kind: 'anonymous' }
  | {
      kind: 'signed';
      via: 'header' | 'query';
      accessKey: string;
      /** What the client says the body hashes to (header signatures); presigned URLs sign no payload. */
      payloadHash: string;
      verify(secret: string): Promise<boolean>;
      /** Header signatures: the signature an aws-chunked chunk must carry, chained from `previous` (the first from the request's). */
      chunkSignature?(secret: string, previous: string | null, chunk: Buffer): Promise<string>;
    };

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

/** `20261126T080000Z` as a date, or null. */
function parseAmzDate(value: string | undefined): Date | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value ?? '');
  if (!m) return null;
  const d = new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
  return Number.isNaN(d.getTime()) ? null : d;
}

/** `AKID/20261126/us-east-1/s3/aws4_request`, checked against the request date and the store's region. */
function parseCredential(
  credential: string,
  date: Date,
  region: string,
): { accessKey: string; region: string } | S3Error {
  const parts = credential.split('/');
  if (parts.length < 5) return s3Error('AuthorizationHeaderMalformed', 'the credential is malformed');
  const [day, scopeRegion, service, terminator] = parts.slice(-4) as [string, string, string, string];
  const accessKey = parts.slice(0, -4).join('/');
  if (!accessKey || terminator !== 'aws4_request' || service !== 's3')
    return s3Error('AuthorizationHeaderMalformed', 'the credential scope must be <date>/<region>/s3/aws4_request');
  if (day !== date.toISOString().slice(0, 10).replace(/-/g, ''))
    return s3Error('AuthorizationHeaderMalformed', 'the credential date does not match the request date');
  if (scopeRegion !== region)
    return s3Error('AuthorizationHeaderMalformed', `the region '${scopeRegion}' is wrong; expecting '${region}'`);
  return { accessKey, region };
}

function signer(accessKey: string, secret: string, region: string): SignatureV4 {
  return new SignatureV4({
    service: 's3',
    region,
    credentials: { accessKeyId: accessKey, secretAccessKey: secret },
    sha256: Hash.bind(null, 'sha256'),
    // S3 signs the path as sent (no second encoding), and the payload hash comes from its header.
    uriEscapePath: false,
    applyChecksum: false,
  });
}

export function sameHex(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The request the client signed, rebuilt from what arrived: its signed headers only. */
function rebuild(req: IncomingS3Request, signedHeaders: string[], dropQuery: ReadonlySet<string>) {
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) {
    const value = header(req.headers, name);
    if (value === undefined) return null;
    headers[name] = value;
  }
  const query: Record<string, string | string[]> = {};
  for (const [k, v] of req.query) {
    if (dropQuery.has(k)) continue;
    const prior = query[k];
    query[k] = prior === undefined ? v : Array.isArray(prior) ? [...prior, v] : [prior, v];
  }
  return new HttpRequest({
    method: req.method,
    protocol: 'http:',
    hostname: header(req.headers, 'host') ?? '',
    path: req.rawPath,
    query,
    headers,
  });
}

function headerClaim(req: IncomingS3Request, authorization: string, region: string, now: Date): Claim | S3Error {
  const m = /^AWS4-HMAC-SHA256\s+(.*)$/s.exec(authorization);
  if (!m) return s3Error('AccessDenied', 'only AWS Signature Version 4 (AWS4-HMAC-SHA256) is accepted');
  const fields = new Map<string, string>();
  for (const part of m[1]!.split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const credential = fields.get('Credential');
  const signedHeaders = fields.get('SignedHeaders');
  const signature = fields.get('Signature');
  if (!credential || !signedHeaders || !signature)
    return s3Error(
      'AuthorizationHeaderMalformed',
      'the Authorization header needs Credential, SignedHeaders and Signature',
    );
  const date = parseAmzDate(header(req.headers, 'x-amz-date'));
  if (!date) return s3Error('AccessDenied', 'AWS authentication requires a valid x-amz-date header');
  if (Math.abs(now.getTime() - date.getTime()) > MAX_SKEW_MS)
    return s3Error('RequestTimeTooSkewed', 'the difference between the request time and the current time is too large');
  const scope = parseCredential(credential, date, region);
  if ('code' in scope) return scope;
  const payloadHash = header(req.headers, PAYLOAD_HEADER);
  if (!payloadHash) return s3Error('InvalidRequest', `missing required header for this request: ${PAYLOAD_HEADER}`);
  const names = signedHeaders.split(';');
  if (!names.includes('host')) return s3Error('AccessDenied', 'the host header must be signed');
  return {
    kind: 'signed',
    via: 'header',
    accessKey: scope.accessKey,
    payloadHash,
    async verify(secret) {
      const request = rebuild(req, names, new Set());
      if (!request) return false;
      const signed = await signer(scope.accessKey, secret, region).sign(request, {
        signingDate: date,
        signableHeaders: new Set(names),
      });
      const expected = /SignedHeaders=([^,]*), Signature=([0-9a-f]+)$/.exec(signed.headers.authorization ?? '');
      return !!expected && expected[1] === signedHeaders && sameHex(expected[2]!, signature);
    },
    async chunkSignature(secret, previous, chunk) {
      const day = credential.split('/').slice(-4, -3)[0]!;
      const stringToSign = [
        CHUNK_ALGORITHM,
        header(req.headers, 'x-amz-date'),
        `${day}/${region}/s3/aws4_request`,
        previous ?? signature,
        EMPTY_SHA256,
        createHash('sha256').update(chunk).digest('hex'),
      ].join('\n');
      return signer(scope.accessKey, secret, region).sign(stringToSign, { signingDate: date });
    },
  };
}

function queryClaim(req: IncomingS3Request, region: string, now: Date): Claim | S3Error {
  const q = new Map(req.query.map(([k, v]) => [k, v]));
  if (q.get('X-Amz-Algorithm') !== ALGORITHM)
    return s3Error('AccessDenied', 'only AWS Signature Version 4 (AWS4-HMAC-SHA256) is accepted');
  if (q.has('X-Amz-Security-Token')) return s3Error('AccessDenied', 'session tokens are not accepted');
  const date = parseAmzDate(q.get('X-Amz-Date'));
  const expires = Number(q.get('X-Amz-Expires'));
  const credential = q.get('X-Amz-Credential');
  const signedHeaders = q.get('X-Amz-SignedHeaders');
  const signature = q.get('X-Amz-Signature');
  if (!date || !credential || !signedHeaders || !signature || !Number.isInteger(expires))
    return s3Error(
      'AuthorizationQueryParametersError',
      'the presigned URL is missing or has malformed X-Amz-* parameters',
    );
  if (expires < 1 || expires > MAX_PRESIGN_SECONDS)
    return s3Error('AuthorizationQueryParametersError', 'X-Amz-Expires must be between 1 and 604800 seconds');
  if (date.getTime() - now.getTime() > MAX_SKEW_MS)
    return s3Error('AccessDenied', 'the request is not valid yet (X-Amz-Date is in the future)');
  if (now.getTime() > date.getTime() + expires * 1000) return s3Error('AccessDenied', 'Request has expired');
  const scope = parseCredential(credential, date, region);
  if ('code' in scope) return scope;
  const names = signedHeaders.split(';');
  if (!names.includes('host')) return s3Error('AccessDenied', 'the host header must be signed');
  return {
    kind: 'signed',
    via: 'query',
    accessKey: scope.accessKey,
    payloadHash: UNSIGNED_PAYLOAD,
    async verify(secret) {
      const request = rebuild(req, names, new Set(PRESIGN_PARAMS));
      if (!request) return false;
      // A presigned URL signs no payload: the hash is UNSIGNED-PAYLOAD, neither signed nor hoisted.
      if (!names.includes(PAYLOAD_HEADER)) request.headers[PAYLOAD_HEADER] = UNSIGNED_PAYLOAD;
      const presigned = await signer(scope.accessKey, secret, region).presign(request, {
        signingDate: date,
        expiresIn: expires,
        signableHeaders: new Set(names),
        unsignableHeaders: new Set([PAYLOAD_HEADER]),
        unhoistableHeaders: new Set([...names, PAYLOAD_HEADER]),
      });
      const expected = presigned.query?.['X-Amz-Signature'];
      return (
        typeof expected === 'string' &&
        presigned.query?.['X-Amz-SignedHeaders'] === signedHeaders &&
        sameHex(expected, signature)
      );
    },
  };
}

/**
 * Who the request claims to be: anonymous (no Authorization header, no X-Amz-Algorithm),
 * a SigV4 header or a presigned URL (to be verified with the key's secret), or an error
 * (malformed, skewed, expired, another scheme, both mechanisms at once).
 */
export function claimOf(req: IncomingS3Request, region: string, now = new Date()): Claim | S3Error {
  const authorization = header(req.headers, 'authorization');
  const presigned = req.query.some(([k]) => k === 'X-Amz-Algorithm' || k === 'X-Amz-Signature' || k === 'Signature');
  if (authorization && presigned)
    return s3Error(
      'InvalidArgument',
      'only one auth mechanism allowed: the Authorization header or X-Amz-* query parameters',
    );
  if (authorization) return headerClaim(req, authorization, region, now);
  if (presigned) return queryClaim(req, region, now);
  return { kind: 'anonymous' };
}
