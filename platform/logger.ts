import pino, { type DestinationStream, type Logger } from 'pino';

/**
 * Paths pino censors in every log line. Handlers never log request bodies or headers,
 * so this is the second line of defence for secrets, not the first.
 */
export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'token',
  '*.token',
  'secret',
  '*.secret',
  'password',
  '*.password',
  'client_secret',
  '*.client_secret',
  'auth_key',
  '*.auth_key',
  'private_key',
  '*.private_key',
  'pre_shared_key',
  '*.pre_shared_key',
  's3_secret_key',
  '*.s3_secret_key',
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    { level, base: { service: 'berth' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' } },
    destination,
  );
}
