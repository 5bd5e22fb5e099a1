import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { RouteDef } from '../../api/route';
import { routes } from '../../api/routes';
import { TEST_ENV } from './env';

const key = (r: Pick<RouteDef, 'method' | 'path'>) => `${r.method.toUpperCase()} ${r.path}`;

/** Notes, for the suite's end, that a route's audit entry was checked on an accepted request. */
export function tallyAudit(r: RouteDef): void {
  const dir = process.env[TEST_ENV.auditTally];
  if (dir) appendFileSync(path.join(dir, String(process.pid)), `${key(r)}\n`);
}

/** The mutating routes no test has sent an accepted request to (their audit entries unchecked). */
export function unauditedRoutes(dir: string): string[] {
  const seen = new Set(readdirSync(dir).flatMap((f) => readFileSync(path.join(dir, f), 'utf8').split('\n')));
  return routes
    .filter((r) => r.method !== 'get')
    .map(key)
    .filter((k) => !seen.has(k));
}
