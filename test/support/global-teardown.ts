import { rmSync } from 'node:fs';

export default async function globalTeardown(): Promise<void> {
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
  if (runDir) rmSync(runDir, { recursive: true, force: true });
}
