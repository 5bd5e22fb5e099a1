/**
 * The API alone in a process of its own (as `berth api` runs it), for tests that kill it.
 * Prints `listening <port>` when ready.
 */
import { createApp } from '../../../api/app';
import { loadConfig } from '../../../platform/config';
import { createLogger } from '../../../platform/logger';
import { openRuntime } from '../../../worker/runtime';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('warn');
  const runtime = await openRuntime(config, logger, {
    databaseUrl: config.databaseUrl!,
    temporalAddress: config.temporalAddress!,
  });
  const server = createApp(runtime.apiDeps).listen(0, '127.0.0.1', () => {
    process.stdout.write(`listening ${(server.address() as { port: number }).port}\n`);
  });
}

void main();
