import type { IncomingMessage } from 'node:http';
import { s3Error, type S3Error } from './s3-error';
import { sameHex } from './signature';

/** The aws-chunked payloads the gateway decodes (x-amz-content-sha256). */
export const SIGNED_CHUNKS = 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD';
export const UNSIGNED_CHUNKS_WITH_TRAILER = 'STREAMING-UNSIGNED-PAYLOAD-TRAILER';

/** Computes the signature a chunk must carry, chained from the previous chunk's (null: the first). */
export type ChunkSigner = (previous: string | null, chunk: Buffer) => Promise<string>;

/** Reads the whole body, at most `limit` bytes. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | S3Error> {
  if (Number(req.headers['content-length'] ?? 0) > limit)
    return s3Error('EntityTooLarge', `a body the store checks before storing may be at most ${limit} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return s3Error('EntityTooLarge', `the body is larger than ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/**
 * Decodes an aws-chunked body (`<hex size>[;chunk-signature=<sig>]\r\n<data>\r\n` ... a
 * zero-size chunk, then trailer lines): the object's bytes. With `sign`, every chunk's
 * signature (the last, empty one included) must be the one chained from the request's
 * signature, compared in constant time; without it the chunks carry none (the trailer's
 * checksum is left to the client's own validation).
 */
export async function decodeAwsChunked(raw: Buffer, sign: ChunkSigner | null): Promise<Buffer | S3Error> {
  const bad = (why: string) => s3Error('IncompleteBody', `the aws-chunked body is malformed: ${why}`);
  const parts: Buffer[] = [];
  let at = 0;
  let previous: string | null = null;
  for (;;) {
    const eol = raw.indexOf('\r\n', at);
    if (eol < 0) return bad('a chunk header has no end');
    const [sizeHex, ...extensions] = raw.subarray(at, eol).toString('latin1').split(';');
    const size = /^[0-9a-fA-F]{1,8}$/.test(sizeHex ?? '') ? parseInt(sizeHex!, 16) : NaN;
    if (!Number.isInteger(size)) return bad('a chunk size is not hexadecimal');
    const data = raw.subarray(eol + 2, eol + 2 + size);
    if (data.length !== size) return bad('a chunk is shorter than its size');
    if (sign) {
      const given = extensions.find((e) => e.startsWith('chunk-signature='))?.slice('chunk-signature='.length);
      const expected = await sign(previous, data);
      if (!given || !sameHex(expected, given))
        return s3Error('AccessDenied', 'a chunk signature does not match (the body is not the one signed)');
      previous = expected;
    }
    at = eol + 2 + size;
    if (size === 0) return Buffer.concat(parts);
    if (raw.subarray(at, at + 2).toString('latin1') !== '\r\n') return bad('a chunk does not end with CRLF');
    at += 2;
    parts.push(data);
  }
}
