import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';

/** The S3 error codes the object store's gateway answers with, and their HTTP status (as S3 has them). */
const STATUS = {
  AccessDenied: 403,
  AuthorizationHeaderMalformed: 400,
  AuthorizationQueryParametersError: 400,
  EntityTooLarge: 400,
  IncompleteBody: 400,
  InvalidArgument: 400,
  InvalidRequest: 400,
  NotImplemented: 501,
  RequestTimeTooSkewed: 403,
  XAmzContentSHA256Mismatch: 400,
  ServiceUnavailable: 503,
} as const;

export type S3ErrorCode = keyof typeof STATUS;

export interface S3Error {
  code: S3ErrorCode;
  message: string;
}

export function s3Error(code: S3ErrorCode, message: string): S3Error {
  return { code, message };
}

function xmlEscape(s: string): string {
  return s.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!);
}

/** Answers with the S3 error document (`<Error><Code>…`), as S3 does; HEAD gets the status only. */
export function sendS3Error(res: ServerResponse, method: string, error: S3Error, resource: string): void {
  const requestId = randomBytes(8).toString('hex').toUpperCase();
  const body =
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<Error><Code>${error.code}</Code><Message>${xmlEscape(error.message)}</Message>` +
    `<Resource>${xmlEscape(resource)}</Resource><RequestId>${requestId}</RequestId></Error>`;
  res.writeHead(STATUS[error.code], {
    'content-type': 'application/xml',
    'content-length': Buffer.byteLength(body),
    'x-amz-request-id': requestId,
    connection: 'close',
  });
  res.end(method === 'HEAD' ? undefined : body);
}
