import { rmSync } from 'node:fs';
import path from 'node:path';
import type { Config } from 'jest';
import { unauditedRoutes } from './audit-tally';

/** Whether this run is the whole suite (`npm test`), not a chosen file or test name. */
function wholeSuite(globalConfig: Record<string, any>, projectConfig: Record<string, any>): boolean {
  const patterns = globalConfig.testPathPatterns?.patterns ?? [];
  const matchesSuite = ((projectConfig.testMatch as string[] | undefined) ?? []).some((m) =>
    m.endsWith(path.join('test', '**', '*.test.ts')),
  );
  return (
    patterns.length === 0 &&
    !globalConfig.testNamePattern &&
    !globalConfig.onlyChanged &&
    !globalConfig.findRelatedTests &&
    matchesSuite
  );
}

export default async function globalTeardown(globalConfig?: Config, projectConfig?: Config): Promise<void> {
  const g = globalThis as Record<string, unknown>;
  const stops = (g.__berthTestStops as Array<() => Promise<void>> | undefined) ?? [];
  for (const stop of stops.reverse()) {
    try {
      await stop();
    } catch (err) {
      process.stderr.write(`[test teardown] ${String(err)}\n`);
    }
  }
  const runDir = g.__berthTestRunDir as string | undefined;
  if (!runDir) return;
  // The audit check runs on every accepted mutating request; over the whole suite, every
  // mutating route of the route table must have been checked at least once.
  const whole =
    globalConfig &&
    projectConfig &&
    wholeSuite(globalConfig as Record<string, any>, projectConfig as Record<string, any>);
  const missing = whole || process.env.BERTH_TEST_AUDIT_REPORT ? unauditedRoutes(path.join(runDir, 'audit-tally')) : [];
  rmSync(runDir, { recursive: true, force: true });
  if (!whole) {
    // BERTH_TEST_AUDIT_REPORT=1 on a partial run: which mutating routes its tests did not call successfully.
    if (missing.length > 0)
      process.stderr.write(`[audit] mutating routes not called successfully in this run:\n  ${missing.join('\n  ')}\n`);
    return;
  }
  if (missing.length > 0) {
    throw new Error(
      `no test made an accepted request (and so checked the audit entry) to ${missing.length} mutating route(s):\n  ${missing.join('\n  ')}`,
    );
  }
}
